package stage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SocketName is the agent's socket inside the job's directory (Dir).
const SocketName = "agent.sock"

// Dir is the job's private directory, where its agent's socket is: in the
// temporary directory ($TMPDIR of getenv, else /tmp), named from the user
// ID and the runner's and job's IDs (CUSTOM_ENV_CI_RUNNER_ID,
// CUSTOM_ENV_CI_JOB_ID of getenv), so every process of the job finds it
// and no two jobs share one.
func Dir(getenv func(string) string) (string, error) {
	job := getenv("CUSTOM_ENV_CI_JOB_ID")
	if job == "" {
		return "", errors.New("CUSTOM_ENV_CI_JOB_ID is not set: the stage must be run by GitLab Runner's Custom executor")
	}
	runner := getenv("CUSTOM_ENV_CI_RUNNER_ID")
	if runner == "" {
		runner = "0"
	}
	name := "tether-gitlab-" + strconv.Itoa(os.Getuid()) + "-r" + clean(runner) + "-j" + clean(job)
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, name), nil
}

// clean keeps letters, digits, '-' and '_' of s (IDs are numbers) and
// bounds its length.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
	return s[:min(len(s), 24)]
}

// CheckDir reports an error unless dir is a directory (not a symbolic
// link) owned by this process's user that no one else may enter: a
// socket in a directory another user controls could be anyone's.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (%s)", dir, fi.Mode().Type())
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to another user: remove it", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s may be entered by others (mode %s): remove it", dir, fi.Mode().Perm())
	}
	return nil
}

// MakeDir creates dir (mode 0700) or accepts it when it exists and passes
// CheckDir.
func MakeDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil || errors.Is(err, fs.ErrExist) {
		if err := CheckDir(dir); err != nil {
			return fmt.Errorf("the job's agent directory: %w", err)
		}
		return nil
	}
	return fmt.Errorf("create the job's agent directory: %w", err)
}
