package poolcmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/pool"
	"github.com/tether-ci/tether/internal/poolctl"
)

// Exit codes of `tether pool`.
const (
	// ExitFailed: the cluster could not be reached, or the controller
	// stopped on an error.
	ExitFailed = 1
	// ExitUsage: a bad command line or pools file.
	ExitUsage = cmdutil.ExitUsage
)

// DefaultMetricsAddress is where `tether pool serve` serves /metrics by
// default: loopback only (the chart sets an address pods can reach).
const DefaultMetricsAddress = "127.0.0.1:9090"

// Options are the flags of `tether pool serve` and `tether pool status`.
type Options struct {
	cmdutil.LogFlags
	Config         string
	Namespace      string
	Kubeconfig     string
	Context        string
	MetricsAddress string
	LeaseName      string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	ReloadInterval time.Duration
	BackoffMax     time.Duration
	Identity       string
}

// NewServeFlagSet returns the FlagSet of `tether pool serve` bound to o.
func NewServeFlagSet(o *Options) *pflag.FlagSet {
	fs := cmdutil.NewFlagSet("tether pool serve")
	o.LogFlags.Register(fs)
	o.kubeFlags(fs)
	fs.StringVar(&o.Config, "config", "", "the pools `FILE` (required; read again when it changes)")
	fs.StringVar(&o.MetricsAddress, "metrics-address", DefaultMetricsAddress, "serve Prometheus metrics on http://`ADDRESS`/metrics (\"\" = none)")
	fs.StringVar(&o.LeaseName, "lease-name", poolctl.DefaultLeaseName, "the leader election's Lease `NAME` (replicas with the same Lease take turns)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", poolctl.DefaultLeaseDuration, "how long a leader's Lease holds without renewal (a replica that died is replaced after it)")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", poolctl.DefaultRenewDeadline, "how long the leader tries to renew its Lease before it stops leading")
	fs.DurationVar(&o.RetryPeriod, "retry-period", poolctl.DefaultRetryPeriod, "how often replicas try to take or renew the Lease")
	fs.DurationVar(&o.ReloadInterval, "reload-interval", poolctl.DefaultReloadInterval, "how often the pools file is read again")
	fs.DurationVar(&o.BackoffMax, "backoff-max", poolctl.DefaultBackoffMax, "the longest wait after a pool's pods could not be created or started")
	fs.StringVar(&o.Identity, "identity", "", "this replica's name in the Lease (default: the host name and a random suffix)")
	return fs
}

// NewStatusFlagSet returns the FlagSet of `tether pool status` bound to o.
func NewStatusFlagSet(o *Options) *pflag.FlagSet {
	fs := cmdutil.NewFlagSet("tether pool status")
	o.kubeFlags(fs)
	fs.StringVar(&o.Config, "config", "", "the pools `FILE`: also show its pools that have no pods, with their sizes")
	return fs
}

func (o *Options) kubeFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "the pools' `NAMESPACE` (default: the kubeconfig's / in-cluster namespace)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context")
}

// Check validates the pools file at path: nil, or the error naming the
// file, the pool and the key.
func Check(path string) ([]pool.Pool, error) {
	return pool.Load(path)
}

// Serve runs the controller until ctx ends; it returns the exit code.
func (o *Options) Serve(ctx context.Context, stderr io.Writer) int {
	log, err := o.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tether pool serve: %v\n", err)
		return ExitUsage
	}
	if o.Config == "" {
		fmt.Fprintf(stderr, "tether pool serve: --config FILE is required: the pools to keep\n")
		return ExitUsage
	}
	pools, err := pool.Load(o.Config)
	if err != nil {
		fmt.Fprintf(stderr, "tether pool serve: %v\n", err)
		return ExitUsage
	}
	cmdutil.RouteKlog(log)
	ns, cs, err := typedClientset(kube.ConfigOptions{Kubeconfig: o.Kubeconfig, Context: o.Context, Namespace: o.Namespace})
	if err != nil {
		log.Error("cannot reach Kubernetes", "err", err)
		return ExitFailed
	}
	metrics := poolctl.NewMetrics(nil)
	c, err := poolctl.New(poolctl.Options{
		Client: cs, Namespace: ns, Pools: pools, ConfigPath: o.Config, ReloadInterval: o.ReloadInterval,
		Identity: o.Identity, LeaseName: o.LeaseName, LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline,
		RetryPeriod: o.RetryPeriod, BackoffMax: o.BackoffMax, Metrics: metrics, Log: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "tether pool serve: %v\n", err)
		return ExitUsage
	}
	if o.MetricsAddress != "" {
		ln, err := net.Listen("tcp", o.MetricsAddress)
		if err != nil {
			log.Error("cannot serve the metrics", "address", o.MetricsAddress, "err", err)
			return ExitFailed
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	names := make([]string, 0, len(pools))
	for _, p := range pools {
		names = append(names, fmt.Sprintf("%s(%d)", p.Name, p.Size))
	}
	log.Info("keeping warm pools", "namespace", ns, "pools", strings.Join(names, ","))
	if err := c.Run(ctx); err != nil {
		log.Error("the controller failed", "err", err)
		return ExitFailed
	}
	return 0
}

// Status prints every pool's pods now and its claims and misses over the
// last hour as a table to stdout; it returns the exit code.
func (o *Options) Status(ctx context.Context, stdout, stderr io.Writer) int {
	var sizes map[string]int
	if o.Config != "" {
		pools, err := pool.Load(o.Config)
		if err != nil {
			fmt.Fprintf(stderr, "tether pool status: %v\n", err)
			return ExitUsage
		}
		sizes = map[string]int{}
		for _, p := range pools {
			sizes[p.Name] = p.Size
		}
	}
	ns, cs, err := typedClientset(kube.ConfigOptions{Kubeconfig: o.Kubeconfig, Context: o.Context, Namespace: o.Namespace})
	if err != nil {
		fmt.Fprintf(stderr, "tether pool status: cannot reach Kubernetes: %v\n", err)
		return ExitFailed
	}
	st, err := poolctl.Status(ctx, cs, ns, sizes, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "tether pool status: %v\n", err)
		return ExitFailed
	}
	WriteStatus(stdout, st)
	return 0
}

// WriteStatus writes the status table: one line per pool.
func WriteStatus(w io.Writer, st []poolctl.PoolStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tSIZE\tREADY\tSTARTING\tCLAIMED\tCLAIMS(1h)\tMISSES(1h)")
	for _, s := range st {
		size := "-"
		if s.Size >= 0 {
			size = fmt.Sprint(s.Size)
		}
		misses := "0"
		if len(s.Misses) > 0 {
			var parts []string
			total := 0
			for _, r := range slices.Sorted(maps.Keys(s.Misses)) {
				parts = append(parts, fmt.Sprintf("%s=%d", r, s.Misses[r]))
				total += s.Misses[r]
			}
			misses = fmt.Sprintf("%d (%s)", total, strings.Join(parts, ","))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Name, size, s.Ready, s.Starting, s.Claimed, s.Claims, misses)
	}
	_ = tw.Flush()
}
