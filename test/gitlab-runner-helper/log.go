package main

import (
	"fmt"
	"io"
)

// logger writes lines as the runner's RunnerTextFormatter does with colours
// off: a level prefix for warnings and errors, none for information.
type logger struct {
	w io.Writer
}

func (l *logger) info(format string, args ...any) {
	fmt.Fprintf(l.w, format+"\n", args...)
}

func (l *logger) warning(format string, args ...any) {
	fmt.Fprintf(l.w, "WARNING: "+format+"\n", args...)
}

func (l *logger) error(format string, args ...any) {
	fmt.Fprintf(l.w, "ERROR: "+format+"\n", args...)
}

// fatal is logrus.Fatalln's line; the caller exits 1.
func (l *logger) fatal(err error) {
	fmt.Fprintf(l.w, "FATAL: %v\n", err)
}

// runnerMessage is an error whose text is the runner's own words, capital
// letter and all (its logrus.Fatalln messages, such as "Missing --file").
type runnerMessage string

func (m runnerMessage) Error() string { return string(m) }
