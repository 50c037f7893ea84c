package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"
)

// agentStepNames are the steps of a stage the GitLab agent's "stage
// served" debug record times (integration/gitlab's stageClock), each
// from the moment the agent read the stage's request, in order, with
// what each one is.
var agentStepNames = []struct{ key, what string }{
	{"settings", "settings parsed (or the previous stage's kept)"},
	{"ready", "script, job response, pod and connection ready; the session starts"},
	{"job_sent", "resume and job written to the kept attach"},
	{"first_bytes", "first bytes back from the shim (resume answer, begin record)"},
	{"script_begin", "begin record decoded"},
	{"script_status", "status record decoded (the script ran and exited in the container)"},
	{"exit_sent", "exit code sent to the stage process"},
}

// agentStepRows reads the "stage served" records of stage in the agent's
// log at path that were written after since and returns a row per step:
// the median time since the request was read and the median of the step
// itself (from the step before).
func agentStepRows(path, stage string, since time.Time) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	at := make(map[string]durations)
	own := make(map[string]durations)
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="stage served"`) || !strings.Contains(line, " stage="+stage+" ") {
			continue
		}
		fields := logFields(line)
		when, err := time.Parse(time.RFC3339Nano, fields["time"])
		if err != nil || when.Before(since) {
			continue
		}
		n++
		var prev time.Duration
		for _, s := range agentStepNames {
			d, err := time.ParseDuration(fields[s.key])
			if err != nil {
				continue
			}
			at[s.key] = append(at[s.key], d)
			own[s.key] = append(own[s.key], d-prev)
			prev = d
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no %q records of stage %s in %s", "stage served", stage, path)
	}
	var rows [][2]string
	for _, s := range agentStepNames {
		if len(at[s.key]) == 0 {
			continue
		}
		rows = append(rows, [2]string{
			fmt.Sprintf("agent's part, step by step (%d stages): %s — %s", n, s.key, s.what),
			fmt.Sprintf("median %s after the request (the step: %s)", ms(at[s.key].median()), ms(own[s.key].median())),
		})
	}
	return rows, nil
}

// logFields are the key=value fields of one slog text record (quoted
// values unquoted).
func logFields(line string) map[string]string {
	out := make(map[string]string)
	for line != "" {
		k, rest, ok := strings.Cut(line, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
				end++
			}
			v, rest = rest[1:min(end, len(rest))], rest[min(end+1, len(rest)):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out[strings.TrimSpace(k)] = v
		line = strings.TrimLeft(rest, " ")
	}
	return out
}

// agentLogName is the driver's log file (log-file, verbose) in a bench
// job's directory: the agent's "stage served" records are read from it.
const agentLogName = "tether.log"
