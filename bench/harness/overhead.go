package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
)

// overheadVariant is one way of running n scripts, measured repeatedly:
// each outcome's wall is the time for all n, its relayCPU the CPU time of
// everything involved (the scripts included).
type overheadVariant struct {
	label string
	runs  []outcome
}

func (v overheadVariant) best(n int) time.Duration {
	return walls(v.runs).min() / time.Duration(n)
}

func (v overheadVariant) median(n int) time.Duration {
	return walls(v.runs).median() / time.Duration(n)
}

func (v overheadVariant) cpu(n int) time.Duration {
	return cpus(v.runs).median() / time.Duration(n)
}

// directRuns runs `shell script` n times from this process, one after the
// other: the baseline for the shim.
func directRuns(ctx context.Context, shell, script string, n int) (outcome, error) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return outcome{}, err
	}
	defer devnull.Close()
	cpu0 := selfCPU() + childrenCPU()
	start := time.Now()
	for range n {
		cmd := exec.CommandContext(ctx, shell, script)
		cmd.Stdout, cmd.Stderr = devnull, devnull
		if err := cmd.Run(); err != nil {
			return outcome{}, fmt.Errorf("%s %s: %w", shell, script, err)
		}
	}
	return outcome{wall: time.Since(start), relayCPU: selfCPU() + childrenCPU() - cpu0}, nil
}

// shellRuns feeds n command lines to one long-running shell (GitLab's
// build container shell) and times until it exits.
func shellRuns(ctx context.Context, shell, line string, n int) (outcome, error) {
	cmd := exec.CommandContext(ctx, shell)
	in, err := cmd.StdinPipe()
	if err != nil {
		return outcome{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return outcome{}, fmt.Errorf("start %s: %w", shell, err)
	}
	go func() {
		_, _ = io.WriteString(in, strings.Repeat(line+"\n", n)+"exit 0\n")
		in.Close()
	}()
	if err := cmd.Wait(); err != nil {
		return outcome{}, fmt.Errorf("%s fed %d commands: %w", shell, n, err)
	}
	return outcome{wall: time.Since(start), relayCPU: processCPU(cmd.ProcessState)}, nil
}

// maxJobScripts is the most scripts tetherJob puts in one job command.
const maxJobScripts = 1000

// warmScripts is the size of the job that warms a fresh shim and session
// up before the timing.
const warmScripts = 10

// tetherJob runs n scripts as jobs of up to maxJobScripts through a fresh
// shim, started and warmed up with a small job before the timing. The wall
// time is the timed jobs'. The CPU time is exact: this process's own and,
// once the shim has exited and been reaped, that of the shim and every
// script it reaped (getrusage, not /proc's 10 ms ticks, which moved a
// 1000-script round by up to ±0.01 ms per script); it covers the shim's
// whole life, start, warm-up and exit included, and is scaled to n of its
// n+warmScripts scripts (which counts the start against tether).
func tetherJob(ctx context.Context, cfg *config, script string, n int) (outcome, error) {
	self0, tree0 := selfCPU(), childrenCPU()
	shim, err := local.Start(ctx, local.Config{Shim: cfg.shim, Args: []string{"--shell=" + cfg.shell}})
	if err != nil {
		return outcome{}, err
	}
	defer shim.Close()
	job := func(k int) (time.Duration, error) {
		scripts := make([]string, k)
		for i := range scripts {
			scripts[i] = script
		}
		start := time.Now()
		res, err := client.Run(ctx, shim, client.Job{Scripts: scripts}, client.Options{Output: io.Discard})
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("tether job of %d scripts: %w", k, err)
		}
		if res.ExitCode != 0 || len(res.Statuses) != k {
			return 0, fmt.Errorf("tether job of %d scripts: exit code %d, %d statuses", k, res.ExitCode, len(res.Statuses))
		}
		return d, nil
	}
	if _, err := job(warmScripts); err != nil {
		return outcome{}, err
	}
	selfWarm := selfCPU()
	own0, err := threadsCPU(shim.Pid())
	if err != nil {
		return outcome{}, err
	}
	// A job command is one line of at most 64 KiB: more than
	// maxJobScripts paths go as several jobs, back to back.
	var d time.Duration
	for left := n; left > 0; left -= maxJobScripts {
		dj, err := job(min(left, maxJobScripts))
		if err != nil {
			return outcome{}, err
		}
		d += dj
	}
	clientCPU := selfCPU() - selfWarm
	own, err := threadsCPU(shim.Pid())
	if err != nil {
		return outcome{}, err
	}
	if err := shim.Close(); err != nil {
		return outcome{}, fmt.Errorf("stop the shim: %w", err)
	}
	total := selfCPU() - self0 + childrenCPU() - tree0
	return outcome{wall: d, relayCPU: total * time.Duration(n) / time.Duration(n+warmScripts), shimCPU: own - own0, clientCPU: clientCPU}, nil
}

// threadsCPU returns a running process's own CPU time to the nanosecond:
// the sum over its threads of their time on a CPU (/proc/PID/task/*/schedstat;
// the shim's threads never exit, so none is missed).
func threadsCPU(pid int) (time.Duration, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("list the threads of pid %d: %v", pid, err)
	}
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("read the CPU time of a thread of pid %d: %w", pid, err)
		}
		field, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %w", f, err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// pairedCPU returns the median over rounds of v's CPU per script minus
// base's in the same round: the rounds interleave the variants, so each
// difference compares the two under the same machine load.
func pairedCPU(v, base *overheadVariant, nv, nBase int) time.Duration {
	var d durations
	for r := range min(len(v.runs), len(base.runs)) {
		d = append(d, v.runs[r].relayCPU/time.Duration(nv)-base.runs[r].relayCPU/time.Duration(nBase))
	}
	return d.median()
}

// overheadTarget is the design's limit on tether's CPU per script beyond
// the baseline's.
const overheadTarget = 200 * time.Microsecond

func overheadSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	n := cfg.scripts
	nG := max(n/5, min(n, 50)) // the emulation's pipeline is slow: fewer scripts
	script, err := ws.script("true.sh", "#!/bin/sh\ntrue\n")
	if err != nil {
		return nil, err
	}
	wrapped, err := gitlabPath{}.wrap(script)
	if err != nil {
		return nil, err
	}
	logPath := ws.path("overhead-gitlab.log")
	defer os.Remove(logPath)

	direct := &overheadVariant{label: "`" + cfg.shell + " true.sh` × N, spawned by this process (baseline)"}
	tether := &overheadVariant{label: "tether: the N scripts as one job (≤ 1000 per job) through tether-shim, local backend, session included"}
	shellPlain := &overheadVariant{label: fmt.Sprintf("one shell fed %d lines `sh true.sh` (baseline of the emulation)", nG)}
	shellGitlab := &overheadVariant{label: fmt.Sprintf("GitLab emulation: one shell fed %d lines `sh true.sh.gitlab 2>&1 | tee -a LOG` (trap inside)", nG)}
	type step struct {
		v   *overheadVariant
		run func() (outcome, error)
	}
	directStep := step{direct, func() (outcome, error) { return directRuns(ctx, cfg.shell, script, n) }}
	tetherStep := step{tether, func() (outcome, error) { return tetherJob(ctx, cfg, script, n) }}
	for r := range cfg.overheadRounds {
		// Every other round runs tether first: neither side always
		// follows the same neighbour.
		first, second := directStep, tetherStep
		if r%2 == 1 {
			first, second = tetherStep, directStep
		}
		for _, st := range []step{
			first, second,
			{shellPlain, func() (outcome, error) {
				return shellRuns(ctx, cfg.shell, "sh "+shellQuote(script)+" </dev/null", nG)
			}},
			{shellGitlab, func() (outcome, error) {
				return shellRuns(ctx, cfg.shell, "sh "+shellQuote(wrapped)+" </dev/null 2>&1 | tee -a "+shellQuote(logPath)+" >/dev/null", nG)
			}},
		} {
			oc, err := st.run()
			if err != nil {
				return nil, err
			}
			st.v.runs = append(st.v.runs, oc)
		}
		log.Info("overhead", "round", r+1,
			"direct/script", direct.runs[r].wall/time.Duration(n), "tether/script", tether.runs[r].wall/time.Duration(n),
			"cpu overhead/script", (tether.runs[r].relayCPU-direct.runs[r].relayCPU)/time.Duration(n),
			"shell/script", shellPlain.runs[r].wall/time.Duration(nG), "gitlab-emulation/script", shellGitlab.runs[r].wall/time.Duration(nG))
	}
	sec := &section{title: "Per-script overhead"}
	sec.notes = append(sec.notes, fmt.Sprintf(
		"N = %d trivial scripts (`true`) run one after the other, %d rounds with the variants interleaved (tether and its baseline swap places every other round). "+
			"Wall time per script: **best** round (the least disturbed by the machine's other load) and median round. "+
			"CPU per script: median round's CPU time of everything involved (the shell running the script included), per script — much less sensitive to load; tether's covers the shim's whole life (its start, a %d-script warm-up and its exit included) and is scaled to N of its N+%d scripts. "+
			"The CPU overhead is the median over the rounds of the variant's CPU per script minus its baseline's in the same round; the verdict uses it alone, against the design's ≤ +0.2 ms of CPU per script. "+
			"The wall overhead (best round against best round) is reported, not judged: on a shared machine it follows the load (it can even come out negative). "+
			"Tether and its baseline both run scripts with %s. "+
			"The GitLab emulation's overhead is its trap + `tee` pipeline only; the real GitLab runner also waits for read-logs' 500 ms poll to see each exit code, which is not counted here.",
		n, cfg.overheadRounds, warmScripts, warmScripts, cfg.shell))
	t := &table{head: []string{"variant", "wall/script, best", "wall/script, median", "CPU/script", "overhead: wall (best)", "overhead: CPU (median of rounds)"}}
	over := func(v, base *overheadVariant, n int) (string, string) {
		return fmt.Sprintf("%+.3f ms", float64(v.best(n)-base.best(n))/float64(time.Millisecond)),
			fmt.Sprintf("%+.3f ms", float64(pairedCPU(v, base, n, n))/float64(time.Millisecond))
	}
	t.add(direct.label, ms(direct.best(n)), ms(direct.median(n)), ms(direct.cpu(n)), "", "")
	tw, tc := over(tether, direct, n)
	t.add(tether.label, ms(tether.best(n)), ms(tether.median(n)), ms(tether.cpu(n)), tw, tc)
	t.add(shellPlain.label, ms(shellPlain.best(nG)), ms(shellPlain.median(nG)), ms(shellPlain.cpu(nG)), "", "")
	gw, gc := over(shellGitlab, shellPlain, nG)
	t.add(shellGitlab.label, ms(shellGitlab.best(nG)), ms(shellGitlab.median(nG)), ms(shellGitlab.cpu(nG)), gw, gc)
	sec.tabs = append(sec.tabs, t)
	var shimCPU, clientCPU durations
	for _, o := range tether.runs {
		shimCPU, clientCPU = append(shimCPU, o.shimCPU), append(clientCPU, o.clientCPU)
	}
	sec.notes = append(sec.notes, fmt.Sprintf("Of tether's CPU per script in the timed jobs, tether-shim itself (forking and reaping the shell, the output pipe, the begin and status records) used %s and the client session (this process) %s (medians of rounds); "+
		"the rest is the shell running the script. In the baseline the forking is this process's.",
		ms(shimCPU.median()/time.Duration(n)), ms(clientCPU.median()/time.Duration(n))))
	sec.goals = append(sec.goals, goal{
		measure:  "per-script overhead (N = " + fmt.Sprint(n) + ")",
		tether:   tc + " CPU (median of " + fmt.Sprint(cfg.overheadRounds) + " rounds), " + tw + " wall (best round)",
		baseline: "GitLab emulation " + gc + " CPU, " + gw + " wall",
		target:   "≤ +0.2 ms CPU (wall reported)",
		verdict:  verdict(pairedCPU(tether, direct, n, n) <= overheadTarget),
	})
	return sec, nil
}
