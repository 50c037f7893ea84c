package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/gitlab"
	"github.com/tether-ci/tether/internal/version"
	"github.com/tether-ci/tether/protocol"
)

// gitlabConfig is the driver's settings file (--config, TETHER_CONFIG).
type gitlabConfig struct {
	Namespace      string            `json:"namespace"`
	Kubeconfig     string            `json:"kubeconfig"`
	Context        string            `json:"context"`
	Image          string            `json:"image"`        // when the job names none
	HelperImage    string            `json:"helper-image"` // carries tether-shim
	BuildsDir      string            `json:"builds-dir"`
	CacheDir       string            `json:"cache-dir"`
	CPU            string            `json:"cpu"`
	Memory         string            `json:"memory"`
	IdleTimeout    string            `json:"idle-timeout"`
	PullPolicy     string            `json:"pull-policy"`
	NodeSelector   map[string]string `json:"node-selector"`
	ServiceAccount string            `json:"service-account"`
	// Shell runs every stage script (absolute path in the job image),
	// whatever its #! line says: the runner's scripts start with
	// #!/usr/bin/env bash, which images without /usr/bin/env cannot run.
	Shell string `json:"shell"`
}

const gitlabUsage = `Usage: tether gitlab config|prepare|run SCRIPT STAGE|cleanup [--config FILE]

The GitLab Runner Custom executor driver: GitLab Runner calls these four
commands for every job (see docs/gitlab.md for the config.toml snippet).
  config    print the driver's JSON (builds_dir, hostname, shell, ...)
  prepare   create the job's pod and wait until it runs (its events go to the job log)
  run       deliver the stage script over the attach stream, run it, stream its output
  cleanup   delete the job's pod (idempotent)

--config FILE (default $TETHER_CONFIG) is a YAML file with the driver's
settings: namespace, kubeconfig, context, image, helper-image, builds-dir,
cache-dir, cpu, memory, idle-timeout, pull-policy, node-selector,
service-account, shell (default /bin/bash: runs every stage script).

Exit codes follow the runner's contract: BUILD_FAILURE_EXIT_CODE when the
script failed (its own code written to BUILD_EXIT_CODE_FILE first),
SYSTEM_FAILURE_EXIT_CODE when the infrastructure failed.
`

// gitlabCmd is `tether gitlab`.
func gitlabCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	codes := gitlab.ReadExitCodes(os.Getenv)
	fs := newFlagSet("tether gitlab")
	configPath := fs.String("config", os.Getenv("TETHER_CONFIG"), "driver settings (YAML)")
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		fmt.Fprint(stdout, gitlabUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	sub := args[0]
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab: %v\n\n%s", err, gitlabUsage)
		return codes.SystemFailure
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := loadGitlabConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab %s: %v\n", sub, err)
		return codes.SystemFailure
	}
	want := map[string]int{"config": 0, "prepare": 0, "run": 2, "cleanup": 0}
	n, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "tether gitlab: unknown command %q\n\n%s", sub, gitlabUsage)
		return codes.SystemFailure
	}
	if len(pos) != n {
		fmt.Fprintf(stderr, "tether gitlab %s: want %d arguments, got %d\n\n%s", sub, n, len(pos), gitlabUsage)
		return codes.SystemFailure
	}
	switch sub {
	case "config":
		return gitlabConfigCmd(cfg, stdout, stderr, codes)
	case "prepare":
		return gitlabPrepare(ctx, cfg, stdout, stderr, log, codes)
	case "run":
		return gitlabRun(ctx, cfg, pos[0], pos[1], stdout, stderr, log, codes)
	default:
		return gitlabCleanup(ctx, cfg, stderr, log, codes)
	}
}

// loadGitlabConfig reads the settings file; unknown keys are errors.
func loadGitlabConfig(p string) (*gitlabConfig, error) {
	cfg := &gitlabConfig{}
	if p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read the driver config --config %s: %w", p, err)
		}
		if err := yaml.UnmarshalStrict(b, cfg); err != nil {
			return nil, fmt.Errorf("driver config %s: %w", p, err)
		}
	}
	if cfg.BuildsDir == "" {
		cfg.BuildsDir = "/builds"
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = "/cache"
	}
	if cfg.HelperImage == "" {
		cfg.HelperImage = kube.DefaultHelperImage
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/bash"
	}
	if !strings.HasPrefix(cfg.Shell, "/") {
		return nil, fmt.Errorf("driver config %s: shell %q must be an absolute path in the job image", p, cfg.Shell)
	}
	return cfg, nil
}

// gitlabConfigCmd prints the JSON config_exec returns to the runner.
func gitlabConfigCmd(cfg *gitlabConfig, stdout, stderr io.Writer, codes gitlab.ExitCodes) int {
	name, err := gitlab.PodName(os.Getenv)
	if err != nil {
		name = ""
	}
	out := map[string]any{
		"builds_dir": cfg.BuildsDir, "cache_dir": cfg.CacheDir, "builds_dir_is_shared": false,
		"hostname": name, "shell": "bash",
		"driver": map[string]string{"name": "tether", "version": version.Version},
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "tether gitlab config: %v\n", err)
		return codes.SystemFailure
	}
	return 0
}

// gitlabPod returns the clients and the job's pod.
func gitlabPod(cfg *gitlabConfig, log *slog.Logger) (*kube.Pod, func(kube.TransportOptions) client.Transport, error) {
	routeKlog(log)
	rc, ns, cs, err := kubeClients(kube.ConfigOptions{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context, Namespace: cfg.Namespace})
	if err != nil {
		return nil, nil, err
	}
	name, err := gitlab.PodName(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	pod := &kube.Pod{Client: cs, Namespace: ns, Name: name, Container: kube.BuildContainer, Logger: log}
	return pod, func(o kube.TransportOptions) client.Transport { return pod.Transport(rc, o) }, nil
}

// gitlabPrepare creates the job's pod and waits until it runs.
func gitlabPrepare(ctx context.Context, cfg *gitlabConfig, stdout, stderr io.Writer, log *slog.Logger, codes gitlab.ExitCodes) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stdout, "ERROR: tether: "+format+"\n", args...)
		return codes.SystemFailure
	}
	job, err := gitlab.ReadJob(os.Getenv)
	if err != nil {
		return fail("%v", err)
	}
	image := job.Image.Name
	if image == "" {
		image = cfg.Image
	}
	if image == "" {
		return fail("the job names no image and the driver config sets no default (image: in %s)", os.Getenv("TETHER_CONFIG"))
	}
	jobLog := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	pod, _, err := gitlabPod(cfg, jobLog)
	if err != nil {
		return fail("%v", err)
	}
	spec := kube.Spec{
		Namespace: pod.Namespace, Name: pod.Name, JobID: pod.Name,
		Image: image, HelperImage: cfg.HelperImage, Serve: true,
		Timeout: job.Timeout(), PullPolicy: corev1.PullPolicy(cfg.PullPolicy),
		ServiceAccountName: cfg.ServiceAccount, NodeSelector: cfg.NodeSelector,
		Labels: map[string]string{},
	}
	for label, v := range map[string]string{"tether.dev/gitlab-project": "CI_PROJECT_ID", "tether.dev/gitlab-pipeline": "CI_PIPELINE_ID", "tether.dev/gitlab-job": "CI_JOB_ID"} {
		if val := gitlab.Env(os.Getenv, v); val != "" {
			spec.Labels[label] = val
		}
	}
	if cfg.IdleTimeout != "" {
		d, err := time.ParseDuration(cfg.IdleTimeout)
		if err != nil {
			return fail("idle-timeout %q in the driver config: %v", cfg.IdleTimeout, err)
		}
		spec.IdleTimeout = d
	} else {
		spec.IdleTimeout = 30 * time.Minute
	}
	for _, q := range []struct {
		v    string
		name corev1.ResourceName
	}{{cfg.CPU, corev1.ResourceCPU}, {cfg.Memory, corev1.ResourceMemory}} {
		if q.v == "" {
			continue
		}
		qty, err := resource.ParseQuantity(q.v)
		if err != nil {
			return fail("%s %q in the driver config: %v", q.name, q.v, err)
		}
		if spec.Resources.Requests == nil {
			spec.Resources.Requests, spec.Resources.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		spec.Resources.Requests[q.name], spec.Resources.Limits[q.name] = qty, qty
	}
	for _, s := range job.Services {
		svc := kube.Service{Image: s.Name, Command: s.Entrypoint, Args: s.Command, Env: map[string]string{}}
		if s.Alias != "" {
			svc.Aliases = []string{s.Alias}
		}
		for _, v := range s.Variables {
			svc.Env[v.Key] = v.Value
		}
		spec.Services = append(spec.Services, svc)
	}
	objs, err := kube.Build(spec)
	if err != nil {
		return fail("cannot build the job's pod: %v", err)
	}
	created, err := kube.Create(ctx, pod.Client, objs, jobLog)
	if err != nil {
		return fail("cannot create the job's pod: %v", err)
	}
	fmt.Fprintf(stdout, "tether: pod %s/%s created (image %s); waiting for it to run\n", created.Namespace, created.Name, image)
	if err := created.WaitRunning(ctx, kube.WaitOptions{}); err != nil {
		return fail("the job's pod did not start: %v", err)
	}
	fmt.Fprintf(stdout, "tether: pod %s/%s is running\n", created.Namespace, created.Name)
	return 0
}

// gitlabRun delivers one stage's script over the attach stream, runs it in
// the build container and maps the result onto the runner's exit codes.
func gitlabRun(ctx context.Context, cfg *gitlabConfig, script, stage string, stdout, stderr io.Writer, log *slog.Logger, codes gitlab.ExitCodes) int {
	content, err := os.ReadFile(script)
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab run: the stage script: %v\n", err)
		return codes.SystemFailure
	}
	if !gitlab.KnownStage(stage) {
		log.Warn("unknown stage; running it in the build container", "stage", stage)
	}
	job, err := gitlab.ReadJob(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab run: %v\n", err)
		return codes.SystemFailure
	}
	pod, transport, err := gitlabPod(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab run: %v\n", err)
		return codes.SystemFailure
	}
	// Earlier stages' records stay in the shim's stream: start after them.
	from, err := client.StreamEnd(ctx, transport(kube.TransportOptions{Logger: log}), 0, client.Options{Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab run: pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
		return codes.SystemFailure
	}
	target := path.Join(kube.FilesDir, stage)
	res, err := client.Run(ctx, transport(kube.TransportOptions{Logger: log}), client.Job{
		ID:      stage + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Scripts: []string{target},
		Files:   []client.File{{Path: target, Content: content}},
		Mask:    job.MaskedValues(),
		Shell:   cfg.Shell,
	}, client.Options{Output: stdout, Logger: log, From: from})
	switch {
	case err == nil && res.ExitCode == 0:
		return 0
	case err == nil || res.Cancelled || (res.Exit != nil && res.Exit.Reason == protocol.ReasonDeadline):
		code := res.ExitCode
		if code == 0 {
			code = 1
		}
		if codes.BuildExitCodeFile != "" {
			if werr := os.WriteFile(codes.BuildExitCodeFile, []byte(strconv.Itoa(code)), 0o600); werr != nil {
				log.Error("cannot write BUILD_EXIT_CODE_FILE", "err", werr)
				return codes.SystemFailure
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "tether gitlab run: stage %s of pod %s ended: %v\n", stage, pod.Name, err)
		}
		return codes.BuildFailure
	default:
		fmt.Fprintf(stderr, "tether gitlab run: stage %s in pod %s/%s failed: %v\n", stage, pod.Namespace, pod.Name, err)
		return codes.SystemFailure
	}
}

// gitlabCleanup deletes the job's pod; a pod that is already gone is fine.
func gitlabCleanup(ctx context.Context, cfg *gitlabConfig, stderr io.Writer, log *slog.Logger, codes gitlab.ExitCodes) int {
	pod, _, err := gitlabPod(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab cleanup: %v\n", err)
		return codes.SystemFailure
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	got, err := pod.Get(ctx)
	if apierrors.IsNotFound(err) {
		return 0 // never created, or already gone
	}
	if err == nil {
		pod.UID = got.UID
		err = pod.Delete(ctx)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab cleanup: delete pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
		return codes.SystemFailure
	}
	return 0
}
