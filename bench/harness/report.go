package main

import (
	"fmt"
	"io"
	"strings"
)

// table is a markdown table.
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = len([]rune(h))
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + c + strings.Repeat(" ", width[i]-len([]rune(c))) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(t.head)
	sep := make([]string, len(width))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
}

// goal is one row of the summary: a measure against its target.
type goal struct {
	measure  string
	tether   string
	baseline string
	target   string
	verdict  string // "met", "MISSED", "skipped: …", "pending: …", "info"
}

// section is one part of the results.
type section struct {
	title string
	notes []string // paragraphs before the tables
	tabs  []*table
	goals []goal
}

// verdict returns "met" or "MISSED".
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
