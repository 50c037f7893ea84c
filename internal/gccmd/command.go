package gccmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/gc"
	"github.com/tether-ci/tether/internal/version"
	"github.com/tether-ci/tether/settings"
)

// Exit codes of `tether gc`: 0 all went well (malformed TTLs and objects
// recreated under the same name are reported, not failures), 1 a list or
// delete failed or the cluster could not be reached, 2 bad command line.
const (
	// ExitFailed: a list or delete failed, or the cluster could not be
	// reached.
	ExitFailed = 1
	// ExitUsage: the options cannot make a cleaner (a bad selector).
	ExitUsage = 2
)

// Options are the settings of `tether gc`, its flags: AddFlags
// registers them, Validate checks them and makes the cleaner's options,
// Run cleans.
type Options struct {
	Namespaces    settings.StringList
	AllNamespaces bool
	DryRun        dryRunFlag
	Selector      string
	Grace         time.Duration
	Resources     string
	ChunkSize     int64
	LogFormat     string
	Kubeconfig    string
	Context       string

	// cleaner and format are what Validate made of the flags.
	cleaner gc.Options
	format  gc.Format
}

// NewFlagSet returns the FlagSet of `tether gc` bound to f.
func NewFlagSet(f *Options) *pflag.FlagSet {
	fs := cmdutil.NewFlagSet("tether gc")
	f.AddFlags(fs)
	return fs
}

// AddFlags registers the flags of `tether gc` on fs.
func (f *Options) AddFlags(fs *pflag.FlagSet) {
	fs.VarP(&f.Namespaces, "namespace", "n", "namespace `NS` to clean (repeatable or comma-separated; default: the kubeconfig's / in-cluster namespace)")
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "clean every namespace (needs the ClusterRole)")
	fs.Var(&f.DryRun, "dry-run", "report what would be deleted; delete nothing (--dry-run=server: let the apiserver check each delete without persisting it)")
	fs.StringVarP(&f.Selector, "selector", "l", "", "extra label `SELECTOR` every object must match (e.g. tether.dev/runner=r1)")
	fs.DurationVar(&f.Grace, "grace", gc.DefaultGrace, "minimum age of an ended Tether pod or an owner-less ConfigMap/Secret before it is deleted")
	fs.StringVar(&f.Resources, "resources", "pods,configmaps,secrets", "comma-separated kinds to clean")
	fs.Int64Var(&f.ChunkSize, "chunk-size", gc.DefaultChunkSize, "list page size")
	fs.StringVar(&f.LogFormat, "log-format", "text", "report format on stdout: text or json")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig context")
}

// Validate checks the flags and makes the cleaner's options of them;
// its errors name the flag.
func (f *Options) Validate() error {
	var err error
	f.cleaner, f.format, err = f.CleanerOptions()
	return err
}

// Run cleans as the validated options say, reporting one line per action
// and a summary to stdout and its diagnostics to stderr, and returns the
// exit code: 0, ExitFailed or ExitUsage.
func (f *Options) Run(ctx context.Context, stdout, stderr io.Writer) int {
	opts, format := f.cleaner, f.format
	log := newGCLogger(stderr, format)
	opts.Log = log

	cfg, defaultNS, err := LoadKubeConfig(f.Kubeconfig, f.Context)
	if err != nil {
		log.Error("cannot load the Kubernetes client configuration", "err", err)
		return ExitFailed
	}
	if len(opts.Namespaces) == 0 {
		opts.Namespaces = []string{defaultNS}
	}
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		log.Error("cannot create the Kubernetes client", "err", err)
		return ExitFailed
	}
	cleaner, err := gc.New(gc.NewStore(client), gc.NewReporter(stdout, format), opts)
	if err != nil {
		fmt.Fprintf(stderr, "tether gc: %v\n", err)
		return ExitUsage
	}
	if _, err := cleaner.Run(ctx); err != nil {
		log.Error("tether gc failed", "err", err)
		return ExitFailed
	}
	return 0
}

// CleanerOptions turns the flags into cleaner options (Namespaces stays
// empty when no namespace flag was given: the kubeconfig decides) and the
// report's format.
func (f *Options) CleanerOptions() (gc.Options, gc.Format, error) {
	format, err := gc.ParseFormat(f.LogFormat)
	if err != nil {
		return gc.Options{}, "", fmt.Errorf("--log-format: %w", err)
	}
	o := gc.Options{Selector: f.Selector, DryRun: f.DryRun.mode, ChunkSize: f.ChunkSize}
	for _, v := range f.Namespaces {
		for _, ns := range strings.Split(v, ",") {
			if ns = strings.TrimSpace(ns); ns == "" {
				return o, "", fmt.Errorf("--namespace: empty namespace name in %q", v)
			}
			o.Namespaces = append(o.Namespaces, ns)
		}
	}
	if f.AllNamespaces {
		if len(o.Namespaces) > 0 {
			return o, "", errors.New("--all-namespaces and --namespace exclude each other")
		}
		o.Namespaces = []string{""}
	}
	if f.Grace < 0 {
		return o, "", fmt.Errorf("--grace %s: must not be negative", f.Grace)
	}
	// gc.Options treats 0 as "default"; an explicit --grace 0 means none.
	o.Grace = f.Grace
	if o.Grace == 0 {
		o.Grace = -1
	}
	if f.ChunkSize < 1 {
		return o, "", fmt.Errorf("--chunk-size %d: must be at least 1", f.ChunkSize)
	}
	for _, r := range strings.Split(f.Resources, ",") {
		k, err := gc.ParseKind(strings.TrimSpace(r))
		if err != nil {
			return o, "", fmt.Errorf("--resources: %w", err)
		}
		o.Kinds = append(o.Kinds, k)
	}
	return o, format, nil
}

// newGCLogger returns the stderr diagnostics logger in the report's format.
func newGCLogger(w io.Writer, format gc.Format) *slog.Logger {
	if format == gc.FormatJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// LoadKubeConfig loads the client configuration the kubectl way: --kubeconfig,
// else $KUBECONFIG, else ~/.kube/config, else the in-cluster service account;
// --context selects a context. It also returns the namespace to use when none
// is given (the context's, or the pod's own namespace in-cluster).
func LoadKubeConfig(kubeconfig, kubeContext string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no usable kubeconfig or in-cluster service account (set --kubeconfig or KUBECONFIG): %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("cannot tell the default namespace (pass -n): %w", err)
	}
	// Hundreds of deletes per run: the client-go default of 5 QPS would
	// take minutes.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = version.UserAgent("gc")
	return cfg, ns, nil
}

// dryRunFlag is --dry-run: a boolean flag ("--dry-run" = client) that also
// accepts --dry-run=client|server|none.
type dryRunFlag struct{ mode gc.DryRun }

func (d *dryRunFlag) String() string {
	if d == nil || d.mode == gc.DryRunNone {
		return "false"
	}
	return string(d.mode)
}

// Set parses the flag value.
func (d *dryRunFlag) Set(v string) error {
	switch v {
	case "true", "client":
		d.mode = gc.DryRunClient
	case "server":
		d.mode = gc.DryRunServer
	case "false", "none":
		d.mode = gc.DryRunNone
	default:
		return fmt.Errorf("want client, server or none, got %q", v)
	}
	return nil
}

// Type names the value in the help text.
func (d *dryRunFlag) Type() string { return "MODE" }

// IsBoolFlag lets --dry-run stand alone.
func (d *dryRunFlag) IsBoolFlag() bool { return true }
