package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/version"
)

const attachUsage = `Usage: tether attach [flags] POD

Follows the job running in POD's tether-shim from a new process (for example
after the runner that started it was restarted): its output from the start
of the job (or from --from, a stream offset) goes to stdout byte-exact, and
tether exits with the job's exit code, like the 'tether run' that started it.
Ctrl-C cancels the job, as with 'tether run'. Once it has seen the job finish
(or cancelled it), tether deletes the pod as 'tether run' would, unless --keep.

Examples:
  tether attach -n ci tether-3f2a9c1b0d
  tether attach -n ci --keep --exit tether-3f2a9c1b0d
`

// attachFlags are the flags of `tether attach`.
type attachFlags struct {
	cmdutil.LogFlags
	Namespace  string
	Kubeconfig string
	Context    string
	Container  string
	From       int64
	Protocol   string
	Exit       bool
	Keep       bool
	// Delete is the deprecated --delete, now the default.
	Delete bool
	// OutputLimit is --output-limit (cmdutil.OutputLimit).
	OutputLimit cmdutil.OutputLimit
}

// newAttachFlagSet returns the FlagSet of `tether attach` bound to f.
func newAttachFlagSet(f *attachFlags) *pflag.FlagSet {
	fs := cmdutil.NewFlagSet("tether attach")
	f.LogFlags.Register(fs)
	f.OutputLimit.Register(fs)
	fs.StringVarP(&f.Namespace, "namespace", "n", "", "Kubernetes `NAMESPACE` (default: the kubeconfig's)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig context")
	fs.StringVarP(&f.Container, "container", "c", "", "the shim's `CONTAINER` (default: the pod's default container)")
	fs.Int64Var(&f.From, "from", 0, "stream offset to replay from (0: the whole job)")
	fs.StringVar(&f.Protocol, "protocol", "", "attach protocol: websocket, spdy, or empty for WebSocket with SPDY fallback")
	fs.BoolVar(&f.Exit, "exit", false, "tell the shim to exit once the job finished (the pod then completes)")
	fs.BoolVar(&f.Keep, "keep", false, "keep the pod after the job finished (default: delete it, as tether run does)")
	fs.BoolVar(&f.Delete, "delete", false, "delete the pod once the job finished")
	_ = fs.MarkDeprecated("delete", "the pod is deleted by default now; --keep keeps it")
	return fs
}

// attachCmd is `tether attach`.
func attachCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f attachFlags
	fs := newAttachFlagSet(&f)
	pos, err := cmdutil.ParseArgs(fs, args)
	if errors.Is(err, pflag.ErrHelp) {
		printUsage(ctx, fs, stdout, attachUsage)
		return 0
	}
	bad := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "tether attach: "+format+"\nRun 'tether attach --help' for usage.\n", args...)
		return exitUsage
	}
	if err != nil {
		return bad("%v", err)
	}
	if len(pos) != 1 {
		return bad("want exactly one POD, got %d arguments", len(pos))
	}
	if f.From < 0 {
		return bad("--from %d is negative", f.From)
	}
	if f.Keep && f.Delete {
		return bad("--keep and --delete contradict each other")
	}
	proto := kube.Protocol(f.Protocol)
	switch proto {
	case kube.ProtocolAuto, kube.ProtocolWebSocket, kube.ProtocolSPDY:
	default:
		return bad("--protocol %q: want websocket or spdy", f.Protocol)
	}
	log, err := f.LogFlags.Logger(stderr)
	if err != nil {
		return bad("%v", err)
	}
	cmdutil.RouteKlog(log)

	cfg, ns, cs, err := cmdutil.KubeClients(kube.ConfigOptions{Kubeconfig: f.Kubeconfig, Context: f.Context, Namespace: f.Namespace, UserAgent: version.UserAgent("attach")})
	if err != nil {
		log.Error("cannot reach Kubernetes", "err", err)
		return cmdutil.ExitTether
	}
	t := &kube.Transport{Config: cfg, Client: cs, Namespace: ns, Pod: pos[0], Container: f.Container,
		Options: kube.TransportOptions{Protocol: proto, Logger: log}}
	opts := client.Options{
		Output:   stdout,
		Events:   cmdutil.Progress(log),
		Logger:   log,
		ExitShim: f.Exit,
	}
	f.OutputLimit.Apply(&opts)
	res, err := client.Attach(ctx, t, f.From, opts)
	cmdutil.Report(log, res, err)
	code := cmdutil.ExitCode(res, err)
	if !f.Keep && (err == nil || res.Exit != nil || res.Cancelled) {
		pod, gerr := (&kube.Pod{Client: cs, Namespace: ns, Name: pos[0], Logger: log}).Get(context.WithoutCancel(ctx))
		if gerr != nil {
			log.Error("cannot delete the pod", "err", gerr)
			return code
		}
		p := kube.PodOf(cs, pod)
		p.Logger = log
		cmdutil.DeletePod(ctx, log, p)
	}
	return code
}
