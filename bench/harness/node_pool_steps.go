package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// warmRound is one timed warm echo job: when its process started, how
// long to its first output and to its end, and the pod it claimed.
type warmRound struct {
	start        time.Time
	first, whole time.Duration
	pod          string
}

// auditTiming is what the warm job's breakdown reads of an audit log line.
type auditTiming struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	Received  string `json:"requestReceivedTimestamp"`
	StageTime string `json:"stageTimestamp"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
}

// warmStep is one step of a warm echo job on its critical path or beside
// it, as the API server saw its request: how long after the process
// started the request arrived, and when it was answered (for the attach:
// when the API server upgraded the connection).
type warmStep struct {
	name     string
	what     string // "verb resource[/subresource]" of the audit log
	byPod    bool   // the request names the claimed pod (else: the namespace's list)
	at, done durations
	found    bool
}

// warmSteps returns the steps of the breakdown, in the order a warm job
// takes them.
func warmSteps() []*warmStep {
	return []*warmStep{
		{name: "list the pool's idle pods", what: "list pods"},
		{name: "claim (update of the pod)", what: "update pods", byPod: true},
		{name: "attach (until the upgrade)", what: "get pods/attach", byPod: true},
		{name: "PodDisruptionBudget create (beside the job)", what: "create poddisruptionbudgets", byPod: true},
		{name: "disruption watch (read, then watch)", what: "get pods", byPod: true},
		{name: "delete the pod", what: "delete pods", byPod: true},
	}
}

// warmBreakdown reads the node API server's audit log at path and returns
// the steps of rounds (their medians over the rounds, from each round's
// process start) as table rows. Requests are the ones of `tether run`
// (its User-Agent) about each round's pod, or its namespace's pod list,
// received while its process ran.
func warmBreakdown(path, ns string, rounds []warmRound) ([]*warmStep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the node's apiserver keeps no audit log (%w): restart the node's apiserver with one: TETHER_E2E_AUDIT=restart scripts/e2e-cluster-up.sh, with nothing else running on the node", err)
	}
	defer f.Close()
	steps := warmSteps()
	type key struct {
		round int
		step  *warmStep
	}
	seen := map[key]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditTiming
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.ObjectRef == nil || !strings.HasPrefix(ev.UserAgent, "tether/") || !strings.HasSuffix(ev.UserAgent, " run") {
			continue
		}
		// The attach's upgrade is its ResponseStarted; every other request
		// is timed by its ResponseComplete.
		what := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			what += "/" + ev.ObjectRef.Subresource
		}
		if (what == "get pods/attach") != (ev.Stage == "ResponseStarted") || ev.Stage != "ResponseStarted" && ev.Stage != "ResponseComplete" {
			continue
		}
		got, err1 := time.Parse(time.RFC3339Nano, ev.Received)
		done, err2 := time.Parse(time.RFC3339Nano, ev.StageTime)
		if err1 != nil || err2 != nil || ev.ObjectRef.Namespace != ns {
			continue
		}
		for i, r := range rounds {
			if got.Before(r.start) || got.After(r.start.Add(r.whole)) {
				continue
			}
			for _, s := range steps {
				if s.what != what || s.byPod && ev.ObjectRef.Name != r.pod || seen[key{i, s}] {
					continue
				}
				seen[key{i, s}] = true // the first of its kind in the round
				s.at = append(s.at, got.Sub(r.start))
				s.done = append(s.done, done.Sub(r.start))
				s.found = true
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return steps, nil
}

// breakdownTable is the warm job's steps as a table: process start (Go's
// start and package initialisation, from `tether version`), each API
// request's arrival and answer after the command started (medians), the
// first output and the end.
func breakdownTable(start, initSum time.Duration, steps []*warmStep, rounds []warmRound) *table {
	t := &table{head: []string{"warm echo job, step", "starts after (median)", "ends after (median)", "takes (median)"}}
	t.add("process start and Go's package initialisation (`tether version` alone; its init sum "+ms(initSum)+")", "0 ms", ms(start), ms(start))
	for _, s := range steps {
		if !s.found {
			t.add(s.name, "—", "—", "not in the audit log")
			continue
		}
		var took durations
		for i := range s.at {
			took = append(took, s.done[i]-s.at[i])
		}
		t.add(s.name, ms(s.at.median()), ms(s.done.median()), ms(took.median()))
	}
	var first, whole durations
	for _, r := range rounds {
		first, whole = append(first, r.first), append(whole, r.whole)
	}
	t.add("first output on the command's stdout", "", ms(first.median()), "")
	t.add("the command's end", "", ms(whole.median()), "")
	return t
}
