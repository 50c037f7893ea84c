package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// agentBeforeVar names another tether binary (an earlier build) whose
// stage agent the GitLab section measures beside this build's, stage for
// stage: a second job is prepared with it, and each round times the
// agent's part of a trivial stage on both, with each agent's CPU time and
// page faults.
const agentBeforeVar = "BENCH_GITLAB_AGENT_BEFORE"

// agentAB is the two agents of the side-by-side measurement.
type agentAB struct {
	before, after       *agentSide
	beforeBin, afterBin string
}

// agentSide is one agent of it: its job, its process and what it cost.
type agentSide struct {
	job   *gitlabJob
	pid   int
	work  durations
	cpu   time.Duration
	fault int64
}

// newAgentAB prepares the job of the agent of bin (none when bin is
// empty: nil) beside after, this build's job, which is prepared already.
func newAgentAB(ctx context.Context, cfg *config, n *node, ws *workspace, after *gitlabJob, id int64, bin string) (*agentAB, error) {
	if bin == "" {
		return nil, nil
	}
	j, err := newGitlabJob(cfg, n, ws, id)
	if err != nil {
		return nil, err
	}
	j.bin = bin
	if out, _, err := j.command(ctx, "prepare"); err != nil {
		return nil, fmt.Errorf("prepare with %s: %w\n%s", bin, err, tailOf([]byte(out), 600))
	}
	ab := &agentAB{before: &agentSide{job: j}, after: &agentSide{job: after}, beforeBin: bin, afterBin: after.bin}
	for _, s := range []*agentSide{ab.before, ab.after} {
		if s.pid, err = agentPID(s.job); err != nil {
			ab.close(ctx)
			return nil, err
		}
	}
	return ab, nil
}

// close ends the earlier build's job.
func (ab *agentAB) close(ctx context.Context) {
	if ab != nil {
		_, _, _ = ab.before.job.command(context.WithoutCancel(ctx), "cleanup")
	}
}

// round times the agent's part of one trivial stage on each agent, the
// earlier build's first.
func (ab *agentAB) round() error {
	if ab == nil {
		return nil
	}
	for _, s := range []*agentSide{ab.before, ab.after} {
		cpu0, f0, err := agentCost(s.pid)
		if err != nil {
			return err
		}
		d, err := s.job.agentWork("step_script", "true")
		if err != nil {
			return err
		}
		cpu1, f1, err := agentCost(s.pid)
		if err != nil {
			return err
		}
		s.work, s.cpu, s.fault = append(s.work, d), s.cpu+cpu1-cpu0, s.fault+f1-f0
	}
	return nil
}

// rows are the side-by-side rows.
func (ab *agentAB) rows() [][2]string {
	if ab == nil || len(ab.after.work) == 0 {
		return nil
	}
	n := len(ab.after.work)
	row := func(s *agentSide, which, bin string) [2]string {
		return [2]string{
			fmt.Sprintf("agent's part side by side, %s (%s), %d stages interleaved", which, bin, n),
			fmt.Sprintf("median %s, min %s; per stage %s CPU, %.1f page faults", ms(s.work.median()), ms(s.work.min()),
				ms(s.cpu/time.Duration(n)), float64(s.fault)/float64(n)),
		}
	}
	return [][2]string{row(ab.before, "before: "+agentBeforeVar, filepath.Base(ab.beforeBin)), row(ab.after, "after: this build", filepath.Base(ab.afterBin))}
}

// agentPID finds the stage agent of job j: the `tether gitlab agent`
// process whose environment has the job's ID.
func agentPID(j *gitlabJob) (int, error) {
	var jobVar string
	for _, kv := range j.env {
		if strings.HasPrefix(kv, "CUSTOM_ENV_CI_JOB_ID=") {
			jobVar = kv
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("\x00gitlab\x00agent")) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(environ, []byte("\x00"+jobVar+"\x00")) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no stage agent of the job with %s", jobVar)
}

// agentCost is the CPU time of every thread of process pid (schedstat,
// in nanoseconds) and its minor page faults so far.
func agentCost(pid int) (time.Duration, int64, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return 0, 0, fmt.Errorf("the stage agent %d: %w", pid, err)
	}
	var cpu time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
		if err != nil {
			continue // a thread that ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			cpu += time.Duration(ns)
		}
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("the stage agent %d: %w", pid, err)
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 8 {
		return 0, 0, fmt.Errorf("the stage agent %d: short stat %q", pid, s)
	}
	minflt, err := strconv.ParseInt(f[7], 10, 64)
	return cpu, minflt, err
}
