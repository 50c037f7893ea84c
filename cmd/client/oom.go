package main

import "k8s.io/apimachinery/pkg/api/resource"

// oomText says a script was killed for memory, with the limit in the
// units Kubernetes users write ("out of memory (limit 64Mi)").
func oomText(limit int64) string {
	if limit <= 0 {
		return "out of memory"
	}
	format := resource.BinarySI
	if limit%1024 != 0 {
		format = resource.DecimalSI
	}
	return "out of memory (limit " + resource.NewQuantity(limit, format).String() + ")"
}
