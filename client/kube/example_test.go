package kube_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Example runs one job in a pod of the current kubeconfig context and
// returns its exit code, the way `tether run` does.
func Example() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	code, err := runJob(ctx, logger)
	if err != nil {
		logger.Error("job failed to run", "err", err)
		os.Exit(125)
	}
	os.Exit(code)
}

func runJob(ctx context.Context, logger *slog.Logger) (int, error) {
	cfg, ns, err := kube.LoadConfig(kube.ConfigOptions{})
	if err != nil {
		return 0, err
	}
	cs, err := kubeapi.New(cfg)
	if err != nil {
		return 0, err
	}
	objs, err := kube.Build(kube.Spec{
		Namespace: ns,
		Image:     "alpine:3",
		Scripts:   []kube.Script{{Name: "build.sh", Content: []byte("echo building\nmake\n")}},
		After:     []kube.Script{{Name: "cleanup.sh", Content: []byte("echo done\n")}},
		Env:       map[string]string{"CI": "true"},
		Timeout:   30 * time.Minute,
	})
	if err != nil {
		return 0, err
	}
	pod, err := kube.Create(ctx, cs, objs, logger)
	if err != nil {
		return 0, err
	}
	defer func() {
		// The ConfigMap and Secret go with the pod (ownerReferences).
		if err := pod.Delete(context.WithoutCancel(ctx)); err != nil {
			logger.Error("delete the pod", "err", err)
		}
	}()
	if err := pod.WaitRunning(ctx, kube.WaitOptions{}); err != nil {
		return 0, err
	}
	res, err := client.Run(ctx, pod.Transport(cfg, kube.TransportOptions{Logger: logger}), objs.Job,
		client.Options{Output: os.Stdout, Logger: logger, ExitShim: true})
	if err != nil {
		return 0, fmt.Errorf("job in pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return res.ExitCode, nil
}
