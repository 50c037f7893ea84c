package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/pool"
)

// actionsPoolTimes are the prepare_job timings of jobs that claimed a warm
// pod and of jobs that created their pod.
type actionsPoolTimes struct{ warm, cold durations }

// actionsPoolPrepare times prepare_job (the whole hook call, through the
// runner stand-in) of a busybox job with TETHER_ACTIONS_POOL on a warm
// pod of a `for: actions` pool against the same job without a pool (a
// cold pod), interleaved; each round makes its warm pod first (not
// timed) and cleans up after each job (not timed).
func actionsPoolPrepare(ctx context.Context, cfg *config, n *node, rounds int, log *slog.Logger) (actionsPoolTimes, error) {
	var t actionsPoolTimes
	k, err := newKubeEnv(n.kubeconfig, n.images)
	if err != nil {
		return t, err
	}
	name := randomName("bench-")
	pools, err := pool.Parse("bench pool", fmt.Appendf(nil, "pools:\n- name: %s\n  for: actions\n  image: %s\n  helper-image: %s\n  pull-policy: Never\n",
		name, n.images.build, n.images.helper))
	if err != nil {
		return t, err
	}
	spec, err := pools[0].Spec(k.ns)
	if err != nil {
		return t, err
	}
	env := []string{actions.EnvNamespace + "=" + k.ns, actions.EnvExternalsImage + "=" + actions.ExternalsOff}
	for r := range rounds {
		if _, err := startWarmPod(ctx, k, spec, name); err != nil {
			return t, err
		}
		w, out, err := timeActionsPrepare(ctx, cfg, n, append(env, actions.EnvPool+"="+name))
		if err != nil {
			return t, fmt.Errorf("warm prepare_job: %w", err)
		}
		if !strings.Contains(out, "claimed warm pod") {
			return t, fmt.Errorf("the warm prepare_job did not claim the warm pod: %s", tailOf([]byte(out), 400))
		}
		c, _, err := timeActionsPrepare(ctx, cfg, n, env)
		if err != nil {
			return t, fmt.Errorf("cold prepare_job: %w", err)
		}
		t.warm, t.cold = append(t.warm, w), append(t.cold, c)
		log.Info("actions prepare_job, pool", "round", r+1, "warm", w.Round(time.Millisecond), "cold", c.Round(time.Millisecond))
	}
	return t, nil
}

// timeActionsPrepare times one prepare_job of a fresh runner whose hook
// has env, cleans up after it, and returns what the hook printed.
func timeActionsPrepare(ctx context.Context, cfg *config, n *node, env []string) (time.Duration, string, error) {
	root, err := os.MkdirTemp("", "bench-actions-pool-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(root)
	r, err := benchRunner(cfg, n, root, env...)
	if err != nil {
		return 0, "", err
	}
	return timedPrepare(ctx, r, n.images.build)
}
