package actions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// deliveredFile is a file to write into the job container.
type deliveredFile struct {
	container string
	content   []byte
	// shared makes it writable by every user: a container step's
	// image may run as another user than the job container.
	shared bool
}

// deliveryJob is a job of the job container's shim that writes files to
// their container paths (making their directories) and makes the
// symbolic links links (link → target; an existing link is replaced, a
// directory in the way fails).
func deliveryJob(id string, files []deliveredFile, links [][2]string) client.Job {
	job := client.Job{ID: id}
	var w strings.Builder
	w.WriteString("#!/bin/sh\n# tether actions: deliver a step's files\n")
	w.WriteString(shell.FailFunc)
	for _, f := range files {
		addDelivery(&job, &w, f.container, f.content, 0o600)
		if f.shared {
			fmt.Fprintf(&w, "chmod a+rw %s || fail %s\n", shell.Quote(f.container), shell.Quote("cannot share "+f.container))
		}
	}
	for _, l := range links {
		link, target := shell.Quote(l[0]), shell.Quote(l[1])
		fmt.Fprintf(&w, "if [ -d %s ] && [ ! -L %s ]; then fail %s; fi\n", link, link, shell.Quote(l[0]+" is a directory, not a link"))
		fmt.Fprintf(&w, "mkdir -p %s && ln -sfn %s %s || fail %s\n", target, target, link, shell.Quote("cannot link "+l[0]+" to "+l[1]))
	}
	script := kube.FilesDir + "/deliver.sh"
	job.Files = append(job.Files, client.File{Path: script, Content: []byte(w.String()), Mode: 0o700})
	job.Scripts = []string{script}
	return job
}

// addDelivery adds content to job as a file delivered into the shim's
// files dir, and to the wrapper script w a line that copies it to its
// container path (making the directory) or fails saying so.
func addDelivery(job *client.Job, w *strings.Builder, container string, content []byte, mode os.FileMode) {
	src := stageFile(job, content, mode)
	fmt.Fprintf(w, "mkdir -p %s && cp %s %s || fail %s\n", shell.Quote(path.Dir(container)), src, shell.Quote(container),
		shell.Quote("cannot write "+container+" in the job container"))
}

// stageFile adds content to job as a file delivered into the shim's files
// dir, under a name of its own in the job, and returns its path there: the
// job's wrapper script copies it into place.
func stageFile(job *client.Job, content []byte, mode os.FileMode) string {
	src := fmt.Sprintf("%s/in-%d", kube.FilesDir, len(job.Files))
	job.Files = append(job.Files, client.File{Path: src, Content: content, Mode: mode})
	return src
}

// readOptional reads a file; one that does not exist is nil, no error.
func readOptional(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
