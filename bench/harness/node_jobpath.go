package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// jobPathRounds is the least number of rounds of the jobpath section
// (BENCH_REPEAT raises it).
const jobPathRounds = 7

// settledAfter is how long an attach is open before the settled rounds
// use it: the API server has connected it to the runtime by then.
const settledAfter = 300 * time.Millisecond

// jobPathSection times the path from an attach to a job's first output
// and exit code on one serving shim (a warm pod's), step by step inside
// each run: an echo job over a new attach and over one open for a while,
// and a trivial stage (`true`, Options.FromEnd as `tether gitlab` runs a
// stage) over a new attach, over one opened just before it (the GitLab
// agent's spare when stages follow each other), and over the connection
// kept from the job before (Options.KeepConn); a ping's round trip on an
// open attach is the floor. The variants alternate within each round.
func jobPathSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "From an attach to the job's first output and exit code (one warm pod, the real node)"}
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+".")
		return sec, nil
	}
	k, err := newKubeEnv(n.kubeconfig, n.images)
	if err != nil {
		return nil, err
	}
	name, err := startWarmPod(ctx, k, kube.Spec{Namespace: k.ns, Image: n.images.build, HelperImage: n.images.helper}, randomName("jobpath-"))
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = k.cs.CoreV1().Pods(k.ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	}()
	time.Sleep(warmSettle)
	p := &jobPath{k: k, pod: name}
	rounds := max(cfg.repeat, jobPathRounds)
	for r := range rounds {
		if err := p.round(ctx, r); err != nil {
			sec.notes = append(sec.notes, "**FAILED:** "+tailOf([]byte(err.Error()), 800))
			return sec, nil
		}
		log.Info("jobpath", "round", r+1, "echo_new_attach_first", p.echoNew[len(p.echoNew)-1].output.Round(time.Microsecond),
			"stage_kept", p.stageKept[len(p.stageKept)-1].Round(time.Microsecond))
	}
	sec.notes = append(sec.notes, fmt.Sprintf("One warm pod (client/kube's WarmPod; its shim serves jobs as `tether run --pool` and the GitLab agent use it), "+
		"%d rounds, the variants interleaved in each; medians, each step timed inside the same run. An echo job's script travels as a file over the attach as a warm job's does. "+
		"The API server answers a WebSocket attach's upgrade at once and only then connects it to the kubelet and the runtime (SPDY: a connection and four streams one after another), "+
		"so the first bytes written to a new attach wait there: an attach open for %s before its job shows the path without that wait.", rounds, settledAfter))
	echo := &table{head: []string{"echo job (`echo hello`)", "attach upgrade", "→ first bytes back (resume answer)", "→ begin record", "→ first output", "→ exit code (job record)", "upgrade → first output"}}
	echo.add(p.echoRow("new attach", p.echoNew, true)...)
	echo.add(p.echoRow(fmt.Sprintf("attach open for %s", settledAfter), p.echoSettled, false)...)
	sec.tabs = append(sec.tabs, echo)
	stage := &table{head: []string{"trivial stage (`true`, FromEnd: request → exit code)", "median", "range"}}
	stage.add("new attach (`tether gitlab run` without the agent, after its process start)", ms(p.stageNew.median()), ms(p.stageNew.min())+"–"+ms(p.stageNew.max()))
	stage.add("attach opened just before the request (the agent's spare when the stages follow each other)", ms(p.stageJust.median()), ms(p.stageJust.min())+"–"+ms(p.stageJust.max()))
	stage.add("the previous job's connection (Options.KeepConn)", ms(p.stageKept.median()), ms(p.stageKept.min())+"–"+ms(p.stageKept.max()))
	stage.add("floor: one ping's round trip on an open attach", ms(p.ping.median()), ms(p.ping.min())+"–"+ms(p.ping.max()))
	sec.tabs = append(sec.tabs, stage)
	sec.goals = append(sec.goals, goal{
		measure:  "warm echo job: attach upgrade → first output (new attach; open attach)",
		tether:   ms(p.upgradeToOutput(p.echoNew).median()) + "; " + ms(p.upgradeToOutput(p.echoSettled).median()),
		baseline: "ping round trip " + ms(p.ping.median()),
		target:   "a few ms past the runtime's connection",
		verdict:  "info",
	}, goal{
		measure:  "trivial stage over the agent's next connection: request → exit code (spare just opened; kept connection)",
		tether:   ms(p.stageJust.median()) + "; " + ms(p.stageKept.median()),
		baseline: "new attach " + ms(p.stageNew.median()),
		target:   "≤ 20 ms stage overhead (the whole stage)",
		verdict:  "info",
	})
	return sec, nil
}

// jobPath is the jobpath section's pod and what its rounds measured.
type jobPath struct {
	k   *kubeEnv
	pod string
	end int64 // the stream's end after the last job (Result.Offset)

	echoNew, echoSettled           []*jobTrace
	echoNewWhole, echoSettledWhole durations
	stageNew, stageJust, stageKept durations
	ping                           durations
}

func (p *jobPath) transport() *kube.Transport {
	return &kube.Transport{Config: p.k.cfg, Client: p.k.cs, Namespace: p.k.ns, Pod: p.pod, Container: kube.BuildContainer,
		Options: kube.TransportOptions{AttachFirst: true}}
}

// job is a one-script job whose script travels as a file.
func (p *jobPath) job(r int, tag, body string) client.Job {
	f := client.File{Path: fmt.Sprintf("%s/%s-%d.sh", kube.FilesDir, tag, r), Content: []byte(body), Mode: 0o700}
	return client.Job{Files: []client.File{f}, Scripts: []string{f.Path}}
}

// run runs job through tt with opts and notes where the stream ends.
func (p *jobPath) run(ctx context.Context, tt *tracedTransport, job client.Job, opts client.Options) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tt.trace.start = time.Now()
	res, err := client.Run(ctx, tt, job, opts)
	took := time.Since(tt.trace.start)
	if err != nil {
		return 0, fmt.Errorf("job on pod %s: %w", p.pod, err)
	}
	if res.ExitCode != 0 {
		return 0, fmt.Errorf("job on pod %s: exit code %d", p.pod, res.ExitCode)
	}
	p.end = res.Offset
	return took, nil
}

// round runs each variant once.
func (p *jobPath) round(ctx context.Context, r int) error {
	// Echo job over a new attach: the clock starts at the Connect.
	tr := &jobTrace{}
	o := traceOptions(tr)
	o.From = p.end
	whole, err := p.run(ctx, &tracedTransport{t: p.transport(), trace: tr}, p.job(r, "echo-new", "echo hello\n"), o)
	if err != nil {
		return err
	}
	p.echoNew, p.echoNewWhole = append(p.echoNew, tr), append(p.echoNewWhole, whole)

	// Echo job over an attach open for a while; its ping's round trip
	// first.
	c, err := p.transport().Connect(ctx)
	if err != nil {
		return err
	}
	time.Sleep(settledAfter)
	rt, err := pingRoundTrip(c, fmt.Sprintf("jobpath-%d", r))
	if err != nil {
		_ = c.Close()
		return err
	}
	p.ping = append(p.ping, rt)
	tr = &jobTrace{}
	o = traceOptions(tr)
	o.From = p.end
	if whole, err = p.run(ctx, &tracedTransport{t: p.transport(), first: c, trace: tr}, p.job(r, "echo-open", "echo hello\n"), o); err != nil {
		return err
	}
	p.echoSettled, p.echoSettledWhole = append(p.echoSettled, tr), append(p.echoSettledWhole, whole)

	// Trivial stages (FromEnd), each after a stage that kept its
	// connection for the next.
	stage := func(tag string, first client.Conn, keep func(client.Conn)) (time.Duration, error) {
		tr := &jobTrace{}
		o := traceOptions(tr)
		o.FromEnd, o.KeepConn = true, keep
		return p.run(ctx, &tracedTransport{t: p.transport(), first: first, trace: tr}, p.job(r, tag, "true\n"), o)
	}
	if d, err := stage("stage-new", nil, nil); err != nil {
		return err
	} else {
		p.stageNew = append(p.stageNew, d)
	}
	var kept client.Conn
	if _, err := stage("stage-before", nil, func(c client.Conn) { kept = c }); err != nil {
		return err
	}
	if kept == nil {
		return fmt.Errorf("the stage's session did not keep its connection")
	}
	d, err := stage("stage-kept", kept, nil)
	if err != nil {
		return err
	}
	p.stageKept = append(p.stageKept, d)
	// The agent's spare: attached once the stage before ended.
	if _, err := stage("stage-before2", nil, nil); err != nil {
		return err
	}
	spare, err := p.transport().Connect(ctx)
	if err != nil {
		return err
	}
	if d, err = stage("stage-spare", spare, nil); err != nil {
		return err
	}
	p.stageJust = append(p.stageJust, d)
	return nil
}

// echoRow is a table row of the echo jobs' steps (medians); withUpgrade:
// the clock started at the attach's Connect.
func (p *jobPath) echoRow(name string, ts []*jobTrace, withUpgrade bool) []string {
	var up, first, begin, output, exit durations
	whole := p.echoNewWhole
	if !withUpgrade {
		whole = p.echoSettledWhole
	}
	for i, t := range ts {
		up = append(up, t.upgraded)
		first = append(first, t.firstByte-t.upgraded)
		begin = append(begin, t.begin-t.firstByte)
		output = append(output, t.output-t.begin)
		exit = append(exit, whole[i]-t.output)
	}
	upCell := ms(up.median())
	if !withUpgrade {
		upCell = "(open before)"
	}
	return []string{name, upCell, ms(first.median()), ms(begin.median()), ms(output.median()), ms(exit.median()), ms(p.upgradeToOutput(ts).median())}
}

// upgradeToOutput is each job's time from its attach's upgrade (or the
// session's start, on an attach open before) to its first output.
func (p *jobPath) upgradeToOutput(ts []*jobTrace) durations {
	var d durations
	for _, t := range ts {
		d = append(d, t.output-t.upgraded)
	}
	return d
}
