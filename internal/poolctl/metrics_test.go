package poolctl

import (
	dto "github.com/prometheus/client_model/go"
)

// testutilCount is the pool's create failures so far.
func testutilCount(m *Metrics, pool string) float64 {
	var out dto.Metric
	if err := m.CreateFailures.WithLabelValues(pool, ReasonFailedCreate).Write(&out); err != nil {
		return -1
	}
	return out.GetCounter().GetValue()
}
