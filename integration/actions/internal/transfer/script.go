package transfer

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// Script is a job of the job container's shim being built: its staged
// files and its wrapper script, which starts with shell.FailFunc.
type Script struct {
	job client.Job
	w   strings.Builder
}

// NewScript starts the job id, whose wrapper says in a comment what it
// does.
func NewScript(id, what string) *Script {
	s := &Script{job: client.Job{ID: id}}
	s.w.WriteString("#!/bin/sh\n# tether actions: " + what + "\n")
	s.w.WriteString(shell.FailFunc)
	return s
}

// Printf adds to the wrapper script.
func (s *Script) Printf(format string, args ...any) {
	fmt.Fprintf(&s.w, format, args...)
}

// WriteString adds text to the wrapper script.
func (s *Script) WriteString(text string) {
	s.w.WriteString(text)
}

// Stage adds content to the job as a file delivered into the shim's files
// dir, under a name of its own in the job, and returns its path there:
// the wrapper copies or moves it into place.
func (s *Script) Stage(content []byte, mode os.FileMode) string {
	src := fmt.Sprintf("%s/in-%d", kube.FilesDir, len(s.job.Files))
	s.job.Files = append(s.job.Files, client.File{Path: src, Content: content, Mode: mode})
	return src
}

// Deliver stages content and adds to the wrapper a line that copies it to
// its container path (making the directory) or fails saying so.
func (s *Script) Deliver(container string, content []byte, mode os.FileMode) {
	src := s.Stage(content, mode)
	s.Printf("mkdir -p %s && cp %s %s || fail %s\n", shell.Quote(path.Dir(container)), src, shell.Quote(container),
		shell.Quote("cannot write "+container+" in the job container"))
}

// ScriptJob is the job id whose one script, written into the shim's files
// dir as name, is content.
func ScriptJob(id, name string, content []byte) client.Job {
	script := kube.FilesDir + "/" + name
	return client.Job{ID: id, Scripts: []string{script}, Files: []client.File{{Path: script, Content: content, Mode: 0o700}}}
}

// Job is the finished job: the wrapper, written into the shim's files dir
// as name, is its one script.
func (s *Script) Job(name string) client.Job {
	job := ScriptJob(s.job.ID, name, []byte(s.w.String()))
	job.Files = append(slices.Clone(s.job.Files), job.Files...)
	return job
}
