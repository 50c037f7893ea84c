package poolctl

import (
	"errors"
	"log/slog"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/internal/pool"
)

// Defaults of Options.
const (
	DefaultLeaseName      = "tether-pool"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultReloadInterval = 5 * time.Second
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = 5 * time.Minute
	// DefaultReadyTimeout bounds the wait for a running warm pod's shim
	// to answer before it is marked idle (and tried again later).
	DefaultReadyTimeout = 2 * time.Minute
)

// Options configure a Controller.
type Options struct {
	// Client reaches the cluster. Required.
	Client kubernetes.Interface
	// Namespace holds the pools' pods, the Lease and the Events. Required.
	Namespace string
	// Pools are the pools to keep.
	Pools []pool.Pool
	// ConfigPath, when set, is the pools file: it is read again every
	// ReloadInterval, and a valid new content replaces Pools (an invalid
	// one is logged and the pools stay as they were).
	ConfigPath     string
	ReloadInterval time.Duration
	// Identity names this replica in the Lease; default the host name and
	// a random suffix.
	Identity string
	// LeaseName, LeaseDuration, RenewDeadline and RetryPeriod are the
	// leader election's (client-go's meanings).
	LeaseName     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// BackoffBase and BackoffMax bound the wait after a pool's pod could
	// not be created or started: BackoffBase, doubled per failure in a
	// row, at most BackoffMax.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// ReadyTimeout bounds the wait for a warm pod's shim to answer.
	ReadyTimeout time.Duration
	// Metrics receives the controller's metrics; nil: none kept.
	Metrics *Metrics
	// Log receives the controller's log; nil discards it.
	Log *slog.Logger
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Client == nil {
		return o, errors.New("poolctl: no Kubernetes client")
	}
	if o.Namespace == "" {
		return o, errors.New("poolctl: no namespace")
	}
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = host + "-" + rand.String(6)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.LeaseName == "" {
		o.LeaseName = DefaultLeaseName
	}
	def(&o.LeaseDuration, DefaultLeaseDuration)
	def(&o.RenewDeadline, DefaultRenewDeadline)
	def(&o.RetryPeriod, DefaultRetryPeriod)
	def(&o.ReloadInterval, DefaultReloadInterval)
	def(&o.BackoffBase, DefaultBackoffBase)
	def(&o.BackoffMax, DefaultBackoffMax)
	def(&o.ReadyTimeout, DefaultReadyTimeout)
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return o, nil
}
