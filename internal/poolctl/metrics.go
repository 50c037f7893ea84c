package poolctl

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the controller's Prometheus metrics, all labelled by pool.
type Metrics struct {
	registry *prometheus.Registry
	// Pods: warm pods by state (starting, idle, claimed).
	Pods *prometheus.GaugeVec
	// Claims: claims the controller saw (a pod relabelled claimed).
	Claims *prometheus.CounterVec
	// Misses: jobs that found no warm pod, by reason, as their claimers
	// recorded them in Events.
	Misses *prometheus.CounterVec
	// Refill: from a claim to the next pod of its pool being idle.
	Refill *prometheus.HistogramVec
	// Creates: pods created; CreateFailures: creates refused, by reason.
	Creates        *prometheus.CounterVec
	CreateFailures *prometheus.CounterVec
	// Deletes: idle pods deleted, by reason.
	Deletes *prometheus.CounterVec
	// Leader is 1 while this replica leads.
	Leader prometheus.Gauge
}

// NewMetrics returns the metrics registered on a new registry (with Go's
// and the process's collectors) when reg is nil, else on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		registry: reg,
		Pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tether_pool_warm_pods",
			Help: "Warm pods of the pool by state: starting (shim not answered yet), idle (claimable), claimed (serving a job)."}, []string{"pool", "state"}),
		Claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_pool_claims_total",
			Help: "Warm pods claimed by a job."}, []string{"pool"}),
		Misses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_pool_misses_total",
			Help: "Jobs that asked the pool for a warm pod and cold-started instead, by reason."}, []string{"pool", "reason"}),
		Refill: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tether_pool_claim_to_refill_seconds",
			Help:    "Time from a claim to the next warm pod of the pool being idle.",
			Buckets: []float64{0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120}}, []string{"pool"}),
		Creates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_pool_pod_creates_total",
			Help: "Warm pods created."}, []string{"pool"}),
		CreateFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_pool_pod_create_failures_total",
			Help: "Warm pods that could not be created or started, by reason."}, []string{"pool", "reason"}),
		Deletes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_pool_pod_deletes_total",
			Help: "Unclaimed warm pods deleted, by reason."}, []string{"pool", "reason"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tether_pool_leader",
			Help: "1 while this replica is the leader that creates and deletes warm pods."}),
	}
	reg.MustRegister(m.Pods, m.Claims, m.Misses, m.Refill, m.Creates, m.CreateFailures, m.Deletes, m.Leader)
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// setPods sets the pool's gauges.
func (m *Metrics) setPods(pool string, starting, idle, claimed int) {
	m.Pods.WithLabelValues(pool, "starting").Set(float64(starting))
	m.Pods.WithLabelValues(pool, "idle").Set(float64(idle))
	m.Pods.WithLabelValues(pool, "claimed").Set(float64(claimed))
}

// forgetPool drops the gauges of a pool that no longer exists.
func (m *Metrics) forgetPool(pool string) {
	m.Pods.DeletePartialMatch(prometheus.Labels{"pool": pool})
}
