package gc

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Action is what the cleaner did with one object.
type Action string

// The actions a report line can carry.
const (
	// ActionDeleted: the object was deleted.
	ActionDeleted Action = "deleted"
	// ActionWouldDelete: dry run; the object would have been deleted.
	ActionWouldDelete Action = "would-delete"
	// ActionSkipped: the object carries a value the cleaner cannot use
	// (a malformed TTL); it is left alone.
	ActionSkipped Action = "skipped"
	// ActionGone: the object disappeared before the delete (not a failure).
	ActionGone Action = "gone"
	// ActionConflict: the UID precondition failed — the name now belongs to
	// a recreated object, which is left alone (not a failure).
	ActionConflict Action = "conflict"
	// ActionFailed: a delete or list failed; the run exits non-zero.
	ActionFailed Action = "failed"
	// ActionSummary: the last line of a run.
	ActionSummary Action = "summary"
)

// Event is one report line.
type Event struct {
	Time      time.Time `json:"time"`
	Action    Action    `json:"action"`
	Kind      Kind      `json:"kind,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	UID       string    `json:"uid,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	// TTLSeconds is the pod's TTL (TTL decisions only).
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	// AgeSeconds is the object's age when it was judged.
	AgeSeconds *float64 `json:"age_seconds,omitempty"`
	Error      string   `json:"error,omitempty"`
	DryRun     bool     `json:"dry_run,omitempty"`
}

// KindCounts counts what happened to one kind of object.
type KindCounts struct {
	Scanned   int `json:"scanned"`
	Matched   int `json:"matched"` // expired pods / orphaned objects
	Deleted   int `json:"deleted"`
	Skipped   int `json:"skipped"`
	Gone      int `json:"gone"`
	Conflicts int `json:"conflicts"`
	Failed    int `json:"failed"`
}

// Summary totals a run.
type Summary struct {
	Pods       KindCounts `json:"pods"`
	ConfigMaps KindCounts `json:"configmaps"`
	Secrets    KindCounts `json:"secrets"`
	// ListFailures counts failed list or owner-lookup calls.
	ListFailures int  `json:"list_failures"`
	DryRun       bool `json:"dry_run,omitempty"`
}

// Failed is the number of failed API calls; non-zero means the run failed.
func (s *Summary) Failed() int {
	return s.Pods.Failed + s.ConfigMaps.Failed + s.Secrets.Failed + s.ListFailures
}

// For returns the counters of kind k.
func (s *Summary) For(k Kind) *KindCounts {
	switch k {
	case KindPod:
		return &s.Pods
	case KindConfigMap:
		return &s.ConfigMaps
	default:
		return &s.Secrets
	}
}

// Format selects how a Reporter writes lines.
type Format string

// The report formats.
const (
	FormatText Format = "text"
	FormatJSON Format = "json"
)

// ParseFormat validates a --log-format value.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case FormatText, FormatJSON:
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown log format %q: want text or json", s)
}

// Reporter writes one line per event, as text for people or JSON objects
// for machines. It is safe for concurrent use.
type Reporter struct {
	mu     sync.Mutex
	w      io.Writer
	format Format
}

// NewReporter returns a Reporter writing to w.
func NewReporter(w io.Writer, format Format) *Reporter {
	return &Reporter{w: w, format: format}
}

// Event writes one event line.
func (r *Reporter) Event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.format == FormatJSON {
		b, _ := json.Marshal(e) // Event has only marshalable fields
		_, _ = r.w.Write(append(b, '\n'))
		return
	}
	_, _ = io.WriteString(r.w, textLine(e)+"\n")
}

// Summary writes the summary line.
func (r *Reporter) Summary(now time.Time, s Summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.format == FormatJSON {
		b, _ := json.Marshal(struct {
			Time   time.Time `json:"time"`
			Action Action    `json:"action"`
			Summary
			Failed int `json:"failed"`
		}{now, ActionSummary, s, s.Failed()})
		_, _ = r.w.Write(append(b, '\n'))
		return
	}
	var b strings.Builder
	b.WriteString("summary:")
	for _, k := range AllKinds() {
		c := s.For(k)
		match := "orphaned"
		if k == KindPod {
			match = "expired"
		}
		fmt.Fprintf(&b, " %s scanned=%d %s=%d deleted=%d", k.Plural(), c.Scanned, match, c.Matched, c.Deleted)
		if k == KindPod {
			fmt.Fprintf(&b, " skipped=%d", c.Skipped)
		}
		fmt.Fprintf(&b, " gone=%d conflicts=%d failed=%d;", c.Gone, c.Conflicts, c.Failed)
	}
	fmt.Fprintf(&b, " list-failures=%d failed=%d", s.ListFailures, s.Failed())
	if s.DryRun {
		b.WriteString(" (dry run: nothing deleted)")
	}
	_, _ = io.WriteString(r.w, b.String()+"\n")
}

func textLine(e Event) string {
	var b strings.Builder
	switch e.Action {
	case ActionWouldDelete:
		b.WriteString("would delete")
	case ActionFailed:
		if e.Name != "" {
			b.WriteString("failed to delete")
		} else {
			b.WriteString("failed")
		}
	default:
		b.WriteString(string(e.Action))
	}
	if e.Kind != "" {
		b.WriteString(" " + string(e.Kind))
	}
	if e.Name != "" {
		b.WriteString(" " + e.Namespace + "/" + e.Name)
	} else if e.Namespace != "" {
		b.WriteString(" in namespace " + e.Namespace)
	}
	if e.UID != "" {
		b.WriteString(" (uid " + e.UID + ")")
	}
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Error != "" {
		b.WriteString(": " + e.Error)
	}
	return b.String()
}
