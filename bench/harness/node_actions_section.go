package main

import (
	"context"
	"log/slog"
	"os"
)

// actionsSection measures the Actions steps on the real node alone
// (actionsSteps): a container step's throughput next to a script step's,
// every byte checked.
func actionsSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "Actions steps (`tether actions`) on the real node"}
	const measure = "an Actions container step's output vs a script step's"
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+".")
		sec.goals = append(sec.goals, goal{measure: measure, tether: "—", baseline: "—", target: "exact", verdict: "skipped: no node"})
		return sec, nil
	}
	if err := actionsSteps(ctx, cfg, n, sec, log); err != nil {
		log.Error("actions measurement failed", "err", err)
		sec.notes = append(sec.notes, "**"+measure+" FAILED:** "+tailOf([]byte(err.Error()), 800))
		sec.goals = append(sec.goals, goal{measure: measure, tether: "—", baseline: "—", target: "exact", verdict: "FAILED (see below)"})
	}
	return sec, nil
}
