package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Protocol selects the attach streaming protocol.
type Protocol string

// Attach protocols.
const (
	// ProtocolAuto tries WebSocket (v5) and falls back to SPDY when the
	// WebSocket upgrade fails or the WebSocket dialer cannot use an HTTPS
	// proxy, as kubectl does. The default.
	ProtocolAuto Protocol = ""
	// ProtocolWebSocket uses WebSocket only.
	ProtocolWebSocket Protocol = "websocket"
	// ProtocolSPDY uses SPDY only.
	ProtocolSPDY Protocol = "spdy"
)

// DefaultConnectTimeout bounds one attach handshake. A healthy handshake
// takes milliseconds; the bound matters when a connection dies during it,
// because client-go's SPDY stream creation then waits for a reply that never
// comes (up to 30s) instead of failing.
const DefaultConnectTimeout = 15 * time.Second

// TransportOptions tune a Transport. The zero value is ready to use.
type TransportOptions struct {
	// Protocol is the streaming protocol; default ProtocolAuto.
	Protocol Protocol
	// ConnectTimeout bounds one attach handshake (the shim's streams
	// established end to end); default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Logger receives the shim's stderr (its diagnostics), line by line,
	// and the transport's own diagnostics; nil discards them.
	Logger *slog.Logger
	// NoLogReplay turns off the log replay: by default, when the
	// container has terminated before the session got the job's result,
	// the session reads the container's log (pods/log, through OpenLog),
	// so the records the shim wrote while nobody was attached (up to its
	// final record) still count, unless the kubelet rotated the log (10
	// MiB by default).
	NoLogReplay bool
	// AttachFirst makes the first Connect attach at once and read the
	// pod only when the attach failed (to tell a pod that is gone or a
	// container that ended from a broken connection), one request instead
	// of two: for a container known to run, such as the pod of a GitLab
	// job between its stages. A reconnect reads the pod first, so a
	// container that ended (an attach to it can fail only once its
	// streams time out) ends the session at once.
	AttachFirst bool
	// LazyDisruptionWatch makes Run watch the pod for disruptions only
	// once an attach failed, or the job ended as a disruption ends it
	// (killed by SIGTERM), instead of for the whole job: a job whose
	// attach works costs no request but that attach. A disruption is
	// then seen once it broke the session's connection (the kubelet
	// stops an evicted pod's containers; an unanswered ping ends a
	// connection to a lost node), not before.
	LazyDisruptionWatch bool
}

// Transport reaches a tether-shim in a pod through the pods/attach
// subresource. It implements client.Transport: every Connect is one attach
// session with stdin, stdout and stderr and no TTY. A Transport must not be
// copied after its first Connect.
type Transport struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// Client checks the container's state before each attach; nil: one
	// built from Config (once, kept inside the Transport).
	Client kubeapi.Interface
	// Namespace, Pod and Container name the shim's container.
	Namespace, Pod, Container string
	// Options tune the transport.
	Options TransportOptions

	built    sync.Once
	builtCS  kubeapi.Interface // from Config when Client is nil
	builtErr error

	// logStreams remembers whether the API server returns the log's
	// stdout alone: shared by the transports of a Watcher's pods
	// (Pod.Transport), else ownLogStreams.
	logStreams    *logStreams
	ownLogStreams logStreams
	// started says the container was seen to start (Pod.Transport after
	// WaitRunning): the first Connect attaches without reading the pod
	// first.
	started atomic.Bool
	// connected says Connect was called before (AttachFirst: only the
	// first attaches without reading the pod).
	connected atomic.Bool
	// disruptions is the watch of the pod Run keeps while its job runs.
	disruptions atomic.Pointer[disruptionWatch]
	// pending is the attach session Claim opened while it claimed the pod
	// (Pod.Transport): the first Connect takes it.
	pending atomic.Pointer[pendingAttach]
	// predialed is the connection Claim dialed for the first WebSocket
	// attach before it knew the pod (nil: none).
	predialed *predial
}

var (
	_ client.Transport = (*Transport)(nil)
	_ client.LogSource = (*Transport)(nil)
)

func (t *Transport) logger() *slog.Logger {
	if t.Options.Logger != nil {
		return t.Options.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Connect attaches to the container (over WebSocket with Tether's own
// small-buffered client of the v5.channel.k8s.io subprotocol, over SPDY
// with client-go's executor). It returns once the attach streams
// are established end to end, or an error: one wrapping client.ErrShimGone
// when the pod is gone or the container has terminated (nothing to attach
// to any more; a *ContainerEndedError with the container's exit code and
// reason, OOMKilled say, in the second case), any other error when this
// attempt failed and a later one may work.
//
// While Run watches the pod, a disruption it saw is returned at once (a
// *DisruptedError).
func (t *Transport) Connect(ctx context.Context) (client.Conn, error) {
	if w := t.disruptions.Load(); w != nil {
		return t.connectWatched(ctx, w)
	}
	return t.connect(ctx)
}

// connect is Connect without Run's disruption watch.
func (t *Transport) connect(ctx context.Context) (client.Conn, error) {
	if t.Config == nil {
		return nil, errors.New("kube transport: no rest.Config")
	}
	cs, err := t.clientset()
	if err != nil {
		return nil, err
	}
	if pa := t.pending.Swap(nil); pa != nil {
		// Claim attached while it claimed the pod: no request to make
		// unless that attach failed; then the pod's state says why.
		t.connected.Store(true)
		c, err := pa.wait(ctx)
		if err != nil {
			if _, cerr := t.checkContainer(ctx, cs); cerr != nil {
				return nil, cerr
			}
		}
		return c, err
	}
	if t.started.Swap(false) || t.Options.AttachFirst && !t.connected.Swap(true) {
		// The container was just seen to start (Pod.Transport after
		// WaitRunning), or is known to run: attach at once, and read the
		// pod only to tell why the attach failed.
		c, err := t.attach(ctx, cs)
		if err != nil {
			// The pod's state says why, as a Connect that reads it
			// first would have: gone, its container ended (a
			// ContainerEndedError), or the API server refused.
			if _, cerr := t.checkContainer(ctx, cs); cerr != nil {
				return nil, cerr
			}
		}
		return c, err
	}
	if _, err := t.checkContainer(ctx, cs); err != nil {
		return nil, err
	}
	return t.attach(ctx, cs)
}

// attach makes one attach session.
func (t *Transport) attach(ctx context.Context, cs kubeapi.Interface) (client.Conn, error) {
	timeout := t.Options.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	log := t.logger().With("pod", t.Namespace+"/"+t.Pod)
	switch t.Options.Protocol {
	case ProtocolWebSocket, ProtocolAuto:
		c, err := dialWebSocket(ctx, t.Config, t.attachURL(cs), timeout, log, t.predialed)
		if err == nil {
			return c, nil
		}
		if t.Options.Protocol == ProtocolWebSocket || !useSPDYInstead(err) {
			return nil, err
		}
		log.Debug("attach over WebSocket refused, trying SPDY", "err", err)
	case ProtocolSPDY:
	default:
		return nil, fmt.Errorf("kube transport: unknown protocol %q (want websocket, spdy or empty for both)", t.Options.Protocol)
	}
	exec, err := remotecommand.NewSPDYExecutor(t.Config, "POST", t.attachURL(cs))
	if err != nil {
		return nil, fmt.Errorf("kube transport: SPDY executor: %w", err)
	}
	return dial(ctx, exec, timeout, log)
}

// clientset returns Client, or one built from Config.
func (t *Transport) clientset() (kubeapi.Interface, error) {
	if t.Client != nil {
		return t.Client, nil
	}
	t.built.Do(func() {
		if t.Config == nil {
			t.builtErr = errors.New("kube transport: no rest.Config")
			return
		}
		if t.builtCS, t.builtErr = kubeapi.New(t.Config); t.builtErr != nil {
			t.builtErr = fmt.Errorf("kube transport: build a clientset from the rest.Config: %w", t.builtErr)
		}
	})
	return t.builtCS, t.builtErr
}

// OpenLog returns the log of the shim's container (pods/log), for the
// session to read after the container terminated: its stdout alone where
// the API server can return one stream (PodLogsQuerySplitStreams), else
// stdout and stderr together (see logStreams). With Options.NoLogReplay it
// returns an error wrapping errors.ErrUnsupported.
func (t *Transport) OpenLog(ctx context.Context) (io.ReadCloser, error) {
	if t.Options.NoLogReplay {
		return nil, fmt.Errorf("kube transport: log replay turned off: %w", errors.ErrUnsupported)
	}
	if w := t.disruptions.Load(); w != nil && w.disrupted() != nil {
		return nil, errDisrupted(w.disrupted())
	}
	cs, err := t.clientset()
	if err != nil {
		return nil, err
	}
	container := t.Container
	if container == "" {
		pod, err := cs.CoreV1().Pods(t.Namespace).Get(ctx, t.Pod, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get pod %s/%s: %w", t.Namespace, t.Pod, err)
		}
		container = t.container(pod)
	}
	ls := t.logStreams
	if ls == nil {
		ls = &t.ownLogStreams
	}
	return ls.open(ctx, cs, t.Namespace, t.Pod, container, t.logger())
}

// checkContainer returns the container's name, or an error wrapping
// client.ErrShimGone when the container can never be attached again (a
// *ContainerEndedError when it terminated).
func (t *Transport) checkContainer(ctx context.Context, cs kubeapi.Interface) (string, error) {
	pod, err := cs.CoreV1().Pods(t.Namespace).Get(ctx, t.Pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("pod %s/%s no longer exists: %w", t.Namespace, t.Pod, client.ErrShimGone)
	}
	if err != nil {
		return "", fmt.Errorf("get pod %s/%s: %w", t.Namespace, t.Pod, err)
	}
	name := t.container(pod)
	// A helper container (Spec.Helper) is a native sidecar: its status is
	// among the init containers'; an ephemeral container's (a shim added
	// to a running pod, as tether actions' container steps) among the
	// ephemeral ones.
	statuses := append(slices.Clone(pod.Status.ContainerStatuses), pod.Status.InitContainerStatuses...)
	statuses = append(statuses, pod.Status.EphemeralContainerStatuses...)
	for _, st := range statuses {
		if st.Name != name {
			continue
		}
		if st.State.Terminated != nil {
			return name, endedSettled(ctx, cs, pod, st, endSettleTimeout, endSettlePoll)
		}
		// Running, or not yet in the status: the kubelet updates the status
		// up to a second after the container started (its "Started" event
		// ends WaitRunning earlier), and it attaches by asking the runtime.
		// A container that really has not started fails the attach.
		return name, nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return name, fmt.Errorf("pod %s/%s has ended (%s%s): %w", t.Namespace, t.Pod, pod.Status.Phase,
			message(pod.Status.Message), client.ErrShimGone)
	}
	return name, nil
}

func message(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

// container returns the container to attach to.
func (t *Transport) container(pod *corev1.Pod) string {
	if t.Container != "" {
		return t.Container
	}
	if c := pod.Annotations[AnnotationDefaultContainer]; c != "" {
		return c
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return BuildContainer
}

// useSPDYInstead reports whether a failed WebSocket attach is worth trying
// again over SPDY, as kubectl decides: the server refused the upgrade, or
// the WebSocket dialer cannot use the configured HTTPS proxy (which SPDY's
// dialer can).
func useSPDYInstead(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}

// attachURL is the pods/attach URL with stdin, stdout and stderr.
func (t *Transport) attachURL(cs kubeapi.Interface) *url.URL {
	opts := &corev1.PodAttachOptions{Container: t.Container, Stdin: true, Stdout: true, Stderr: true}
	return cs.CoreV1().RESTClient().Post().
		Namespace(t.Namespace).Resource("pods").Name(t.Pod).SubResource("attach").
		VersionedParams(opts, kubeapi.ParameterCodec()).URL()
}
