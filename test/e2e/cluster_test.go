//go:build e2e

// Package e2e is the real-node suite: it runs against the single-node
// Kubernetes that scripts/e2e-cluster-up.sh starts (make e2e does it all).
//
// This file holds the helpers every e2e test shares:
//   - NewCluster: client-go clients for the node (TETHER_E2E_KUBECONFIG).
//   - Cluster.NewNamespace: a fresh namespace per test, deleted afterwards.
//   - ShimPod / WithScripts: the standard tether pod (init container copies
//     the shim from the helper image into an emptyDir; the build container
//     runs it with stdin open).
//   - Cluster.CreatePod, WaitPodRunning, WaitPodPhase, DumpPodOnFailure.
//   - Cluster.Attach and Cluster.AttachShim: client-go attach (WebSocket v5
//     with SPDY fallback, or one of them forced) and a record-level view
//     of a shim's stream.
//
// Images come from bin/images (scripts/build-images.sh) and are imported
// into the node; pods use imagePullPolicy Never.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/protocol"
)

// Images built by scripts/build-images.sh and imported into the node. Their
// tag is TETHER_IMAGE_TAG (default dev), as build-images.sh tags them, so
// several checkouts can share one node without running each other's shim.
var (
	// HelperImage is the project's job-pod image as `make release` builds
	// it: only the static /tether-shim (no shell, uid 65532), a
	// linux/amd64 + linux/arm64 index imported from its OCI archive. Every
	// job of the suite copies its shim from it (--helper-image).
	HelperImage = contract.ShimImageRepository + ":" + imageTag()
	// CLIImage is the project's image of the tether CLI at /tether (the
	// cleaner's CronJob runs it), built the same way.
	CLIImage = contract.CLIImageRepository + ":" + imageTag()
	// BusyboxImage is busybox-static with its applets (sh, sleep, cat, ...).
	BusyboxImage = "localhost/tether/busybox:" + imageTag()
	// BashImage is bash-static as /bin/bash plus the busybox applets.
	BashImage = "localhost/tether/bash:" + imageTag()
	// GitImage is BashImage plus Debian's git (and git-remote-http): the
	// GitLab driver tests' helper container.
	GitImage = "localhost/tether/git:" + imageTag()
	// GitLabHelperImage is shaped like GitLab's helper image: GitImage plus
	// the project's gitlab-runner-helper test double and
	// gitlab-runner-build, and no gitlab-runner.
	GitLabHelperImage = "localhost/tether/gitlab-helper:" + imageTag()
	// ActionImage is BusyboxImage plus an ENTRYPOINT of its own
	// (images/action/entrypoint.sh), a container action's image.
	ActionImage = "localhost/tether/action:" + imageTag()
)

// PauseImage is the node's sandbox image (always tagged dev: the node's
// containerd configuration names it).
const PauseImage = "localhost/tether/pause:dev"

// imageTag is the tag of the images under test.
func imageTag() string {
	if t := os.Getenv("TETHER_IMAGE_TAG"); t != "" {
		return t
	}
	return "dev"
}

// NodeName is the name of the e2e node.
const NodeName = "localhost"

// KubeconfigEnv names the variable holding the e2e node's kubeconfig path.
const KubeconfigEnv = "TETHER_E2E_KUBECONFIG"

// E2ELabel marks every object the e2e helpers create.
const E2ELabel = "tether.dev/e2e"

// ShimMountPath is where the standard shim pod mounts its emptyDir, and
// ShimPath is the shim copied into it by the init container.
const (
	ShimMountPath = "/tether"
	ShimPath      = "/tether/bin/tether-shim"
	// ScriptsPath is where WithScripts mounts a ConfigMap of scripts.
	ScriptsPath = "/tether/scripts"
	// BuildContainer is the name of the standard shim pod's main container.
	BuildContainer = "build"
	// InitContainer is the name of the init container that copies the shim.
	InitContainer = "tether-init"
	// InitMountPath is where the init container mounts the emptyDir (a
	// helper image may have a /tether of its own, e.g. the tether CLI, so
	// it is not mounted there). client/kube uses the same path.
	InitMountPath = "/mnt/tether"
)

// Cluster is the e2e node as the tests see it.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig file.
	Kubeconfig string
	// Config is the REST config built from Kubeconfig.
	Config *rest.Config
	// Client is a clientset for Config.
	Client *kubernetes.Clientset
}

// NewCluster returns clients for the e2e node named by TETHER_E2E_KUBECONFIG.
// It fails the test (never skips) when the variable is unset or the node
// cannot be reached: run the suite with `make e2e`, or
// `source ${TETHER_E2E_DIR:-/var/tmp/tether-e2e}/env` after
// scripts/e2e-cluster-up.sh.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	path := os.Getenv(KubeconfigEnv)
	if path == "" {
		t.Fatalf("%s is not set: run `make e2e`, or start the node with scripts/e2e-cluster-up.sh and export %s=<the path it prints>", KubeconfigEnv, KubeconfigEnv)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("make clientset from %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the e2e node is not reachable through %s (is scripts/e2e-cluster-up.sh running?): %v", path, err)
	}
	return &Cluster{Kubeconfig: path, Config: cfg, Client: cs}
}

// NewNamespace creates a namespace named tether-e2e-PREFIX-RANDOM with
// the given extra labels (set at creation, so admission never sees it
// without them), waits until pods can be created in it (its default
// ServiceAccount and the kube-root-ca.crt ConfigMap exist), and deletes it
// when the test ends.
func (c *Cluster) NewNamespace(t testing.TB, prefix string, labels ...map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   fmt.Sprintf("tether-e2e-%s-%s", prefix, rand.String(5)),
		Labels: map[string]string{E2ELabel: "true"},
	}}
	for _, l := range labels {
		maps.Copy(ns.Labels, l)
	}
	got, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	name := got.Name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := c.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	c.WaitFor(ctx, t, "ServiceAccount default and ConfigMap kube-root-ca.crt in "+name, func(ctx context.Context) (bool, error) {
		if _, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, ignoreNotFound(err)
		}
		_, err := c.Client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	return name
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// WaitFor polls cond every 200 ms until it returns true, fails the test
// when it returns an error or ctx ends first.
func (c *Cluster) WaitFor(ctx context.Context, t testing.TB, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// ShimPod returns the standard tether pod in namespace ns: an emptyDir at
// /tether, an init container from HelperImage running
// `/tether-shim copy /mnt/tether/bin/tether-shim` with the emptyDir at
// /mnt/tether, and a build container from
// image running /tether/bin/tether-shim with shimArgs, stdin open
// (stdinOnce false, no tty), restartPolicy Never, a 2 s grace period and
// imagePullPolicy Never. Callers may change it before CreatePod.
func ShimPod(ns, name, image string, shimArgs ...string) *corev1.Pod {
	grace := int64(2)
	automount := false
	enableLinks := false
	mount := []corev1.VolumeMount{{Name: "tether", MountPath: ShimMountPath}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ns,
			Labels:    map[string]string{E2ELabel: "true"},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSDefault, // the node has no cluster DNS
			AutomountServiceAccountToken:  &automount,
			EnableServiceLinks:            &enableLinks,
			Volumes: []corev1.Volume{{
				Name:         "tether",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
			}},
			InitContainers: []corev1.Container{{
				Name:            InitContainer,
				Image:           HelperImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"/tether-shim", "copy", InitMountPath + "/bin/tether-shim"},
				VolumeMounts:    []corev1.VolumeMount{{Name: "tether", MountPath: InitMountPath}},
			}},
			Containers: []corev1.Container{{
				Name:            BuildContainer,
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{ShimPath},
				Args:            shimArgs,
				Stdin:           true,
				StdinOnce:       false,
				TTY:             false,
				VolumeMounts:    mount,
			}},
		},
	}
}

// SimplePod returns a one-container pod running command in image, with
// restartPolicy Never, a 1 s grace period and imagePullPolicy Never.
func SimplePod(ns, name, image string, command ...string) *corev1.Pod {
	grace := int64(1)
	automount := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{E2ELabel: "true"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSDefault,
			AutomountServiceAccountToken:  &automount,
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Command:         command,
			}},
		},
	}
}

// WithScripts mounts ConfigMap configMap (mode 0755) at /tether/scripts in
// the build container of a ShimPod, and returns pod.
func WithScripts(pod *corev1.Pod, configMap string) *corev1.Pod {
	mode := int32(0o755)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: "scripts",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			DefaultMode:          &mode,
		}},
	})
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == BuildContainer {
			pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts,
				corev1.VolumeMount{Name: "scripts", MountPath: ScriptsPath, ReadOnly: true})
		}
	}
	return pod
}

// CreateScripts creates a ConfigMap named name in ns holding scripts
// (file name → content), for WithScripts.
func (c *Cluster) CreateScripts(ctx context.Context, t testing.TB, ns, name string, scripts map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{E2ELabel: "true"}},
		Data:       scripts,
	}
	got, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", ns, name, err)
	}
	return got
}

// CreatePod creates pod and registers DumpPodOnFailure for it.
func (c *Cluster) CreatePod(ctx context.Context, t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := c.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	c.DumpPodOnFailure(t, got.Namespace, got.Name)
	return got
}

// waitingFailures are container waiting reasons that will not fix themselves.
var waitingFailures = map[string]bool{
	"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true,
	"InvalidImageName": true, "CreateContainerConfigError": true,
	"CreateContainerError": true, "RunContainerError": true, "CrashLoopBackOff": true,
}

// podStuck explains why pod can never reach Running, or returns "".
func podStuck(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("pod ended in phase %s (reason %q, message %q)", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && waitingFailures[w.Reason] {
			return fmt.Sprintf("container %s is waiting: %s: %s", s.Name, w.Reason, w.Message)
		}
		if term := s.State.Terminated; term != nil && term.ExitCode != 0 {
			return fmt.Sprintf("container %s terminated with exit code %d (%s): %s", s.Name, term.ExitCode, term.Reason, term.Message)
		}
	}
	return ""
}

// WaitPodRunning waits (at most 2 minutes) until the pod is Running with all
// its containers started, and fails the test early when it cannot get there
// (image missing, init container failed, pod ended).
func (c *Cluster) WaitPodRunning(ctx context.Context, t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var pod *corev1.Pod
	c.WaitFor(ctx, t, "pod "+ns+"/"+name+" Running", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if why := podStuck(p); why != "" {
			return false, errors.New(why)
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running == nil {
				return false, nil
			}
		}
		return true, nil
	})
	return pod
}

// WaitPodPhase waits until the pod reaches phase (within timeout) and
// returns it.
func (c *Cluster) WaitPodPhase(ctx context.Context, t testing.TB, ns, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var pod *corev1.Pod
	c.WaitFor(ctx, t, fmt.Sprintf("pod %s/%s in phase %s", ns, name, phase), func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if p.Status.Phase != phase && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			return false, fmt.Errorf("pod ended in phase %s (reason %q), not %s", p.Status.Phase, p.Status.Reason, phase)
		}
		return p.Status.Phase == phase, nil
	})
	return pod
}

// DumpPodOnFailure logs the pod's status, events and container logs when
// the test has failed by the time it ends.
func (c *Cluster) DumpPodOnFailure(t testing.TB, ns, name string) {
	t.Cleanup(func() {
		if t.Failed() {
			c.DumpPod(t, ns, name)
		}
	})
}

// DumpPod logs the pod's phase, container states, events and the last 100
// lines of each container's log.
func (c *Cluster) DumpPod(t testing.TB, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "==== pod %s/%s ====\n", ns, name)
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "get pod: %v\n", err)
	} else {
		fmt.Fprintf(&b, "phase %s reason %q message %q\n", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
		for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "container %s: %s\n", s.Name, describeState(s.State))
		}
	}
	events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		fmt.Fprintf(&b, "list events: %v\n", err)
	} else {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s: %s (x%d)\n", e.Type, e.Reason, e.Message, e.Count)
		}
	}
	if pod != nil {
		tail := int64(100)
		var names []string
		for _, ct := range pod.Spec.InitContainers {
			names = append(names, ct.Name)
		}
		for _, ct := range pod.Spec.Containers {
			names = append(names, ct.Name)
		}
		for _, cn := range names {
			raw, err := c.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: cn, TailLines: &tail}).DoRaw(ctx)
			if err != nil {
				fmt.Fprintf(&b, "--- logs of %s: %v\n", cn, err)
				continue
			}
			fmt.Fprintf(&b, "--- logs of %s:\n%s\n", cn, raw)
		}
	}
	t.Log(b.String())
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.String()
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: exit %d reason %s: %s", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting: %s: %s", s.Waiting.Reason, s.Waiting.Message)
	}
	return "unknown"
}

// AttachMode selects the attach protocol.
type AttachMode int

// Attach protocols.
const (
	// AttachFallback tries WebSocket (v5) and falls back to SPDY when the
	// upgrade fails, as client/kube does.
	AttachFallback AttachMode = iota
	// AttachWebSocket uses only WebSocket.
	AttachWebSocket
	// AttachSPDY uses only SPDY.
	AttachSPDY
)

func (m AttachMode) String() string {
	switch m {
	case AttachWebSocket:
		return "websocket"
	case AttachSPDY:
		return "spdy"
	}
	return "fallback"
}

// Attach attaches to container of pod ns/name (stdin, stdout and stderr,
// no tty) and streams until the container ends or ctx is cancelled.
func (c *Cluster) Attach(ctx context.Context, mode AttachMode, ns, name, container string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := c.Client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(ns).Name(name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{
			Container: container, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil, TTY: false,
		}, scheme.ParameterCodec)
	exec, err := c.executor(req, mode)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return fmt.Errorf("attach (%s) to %s/%s container %s: %w", mode, ns, name, container, err)
	}
	return nil
}

// executor streams req (pods/attach or pods/exec) over WebSocket, SPDY, or
// WebSocket with a fallback to SPDY, as mode says.
func (c *Cluster) executor(req *rest.Request, mode AttachMode) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("spdy executor: %w", err)
	}
	switch mode {
	case AttachWebSocket:
		return ws, nil
	case AttachSPDY:
		return spdy, nil
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("fallback executor: %w", err)
	}
	return exec, nil
}

// Exec runs command in container of pod ns/name (pods/exec, WebSocket with
// a fallback to SPDY) and returns its error, with its output in it.
func (c *Cluster) Exec(ctx context.Context, ns, name, container string, command ...string) error {
	req := c.Client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(ns).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := c.executor(req, AttachFallback)
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	var out bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out}); err != nil {
		return fmt.Errorf("exec %q in %s/%s container %s: %w (output %q)", command, ns, name, container, err, out.String())
	}
	return nil
}

// ShimStream is a live attach to a tether-shim: commands go to its stdin,
// records come back decoded. Close it to end the attach (the shim keeps
// running: stdinOnce is false).
type ShimStream struct {
	t       testing.TB
	stdin   *io.PipeWriter
	records chan protocol.Record
	cancel  context.CancelFunc
	done    chan struct{} // closed when the attach has ended
	decoded chan struct{} // closed when the decoder has stopped
	mu      sync.Mutex
	err     error // the attach's end
	bad     error // the first malformed record, reported by Close
	stderr  *syncbuf.Buffer
}

// AttachShim attaches to the build container of a running shim pod with
// the given protocol and decodes its stdout. It is closed when the test ends.
func (c *Cluster) AttachShim(ctx context.Context, t testing.TB, mode AttachMode, ns, name string) *ShimStream {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &ShimStream{
		t: t, stdin: inW, records: make(chan protocol.Record, 1024),
		cancel: cancel, done: make(chan struct{}), decoded: make(chan struct{}), stderr: &syncbuf.Buffer{},
	}
	go func() {
		defer close(s.done)
		err := c.Attach(ctx, mode, ns, name, BuildContainer, inR, outW, s.stderr)
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		_ = outW.CloseWithError(fmt.Errorf("attach ended: %v", err))
		_ = inR.Close()
	}()
	go func() {
		defer close(s.decoded)
		defer close(s.records)
		dec := protocol.NewDecoder(outR)
		for {
			rec, err := dec.Next()
			if err != nil {
				if errors.Is(err, protocol.ErrMalformed) {
					s.mu.Lock()
					if s.bad == nil {
						s.bad = err
					}
					s.mu.Unlock()
					continue
				}
				return
			}
			rec.Payload = bytes.Clone(rec.Payload)
			s.records <- rec
		}
	}()
	t.Cleanup(s.Close)
	return s
}

// Send writes one command (Reset, command, newline) to the shim's stdin.
func (s *ShimStream) Send(cmd protocol.Command) {
	s.t.Helper()
	line, err := protocol.AppendCommand(nil, cmd)
	if err != nil {
		s.t.Fatalf("encode command %+v: %v", cmd, err)
	}
	if _, err := s.stdin.Write(line); err != nil {
		s.t.Fatalf("send command %q: %v (attach: %v)", line, err, s.Err())
	}
}

// Next returns the next record, failing the test after timeout or when the
// stream ends first.
func (s *ShimStream) Next(timeout time.Duration) protocol.Record {
	s.t.Helper()
	rec, ok := s.TryNext(timeout)
	if !ok {
		s.t.Fatalf("no record from the shim within %v (attach: %v, stderr: %q)", timeout, s.Err(), s.stderr.String())
	}
	return rec
}

// TryNext returns the next record, or false after timeout or at the end of
// the stream.
func (s *ShimStream) TryNext(timeout time.Duration) (protocol.Record, bool) {
	select {
	case rec, ok := <-s.records:
		return rec, ok
	case <-time.After(timeout):
		return protocol.Record{}, false
	}
}

// Resume sends a resume command from offset from with a fresh nonce, skips
// every record before the answer carrying that nonce, and returns the
// answer. The records from offset from follow it.
func (s *ShimStream) Resume(from int64, timeout time.Duration) protocol.Resumed {
	s.t.Helper()
	nonce := rand.String(12)
	s.Send(protocol.Command{Cmd: protocol.CmdResume, From: from, Nonce: nonce})
	end := time.Now().Add(timeout)
	for {
		rec := s.Next(time.Until(end))
		if rec.Type != protocol.TypeResumed {
			continue
		}
		var r protocol.Resumed
		if err := json.Unmarshal(rec.Payload, &r); err != nil {
			s.t.Fatalf("resumed record %q: %v", rec.Payload, err)
		}
		if r.Nonce != nonce {
			continue
		}
		if r.Error != "" {
			s.t.Fatalf("resume from %d refused: %s", from, r.Error)
		}
		return r
	}
}

// Err is how the attach ended (nil while it runs or after a clean end).
func (s *ShimStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stderr is what the container wrote to stderr during this attach.
func (s *ShimStream) Stderr() string { return s.stderr.String() }

// Done is closed when the attach has ended.
func (s *ShimStream) Done() <-chan struct{} { return s.done }

// Close ends the attach, waits (at most 10 s) for it to finish, and fails
// the test if the shim wrote a malformed record.
func (s *ShimStream) Close() {
	s.cancel()
	_ = s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Errorf("attach did not end within 10s of its cancel")
		return
	}
	// The decoder stops once it has read what the attach delivered; a
	// reader that stopped reading records leaves it blocked, so drain.
	for {
		select {
		case <-s.decoded:
			s.mu.Lock()
			bad := s.bad
			s.mu.Unlock()
			if bad != nil {
				s.t.Errorf("the shim wrote a malformed record: %v", bad)
			}
			return
		case <-s.records:
		case <-time.After(10 * time.Second):
			s.t.Errorf("record decoder did not stop within 10s of the attach's end")
			return
		}
	}
}
