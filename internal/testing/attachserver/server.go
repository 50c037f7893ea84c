// Package attachserver is a test-only stand-in for the Kubernetes attach
// path built from upstream's own server code: the kubelet's CRI streaming
// server (k8s.io/kubelet/pkg/cri/streaming) serves attach over SPDY, and
// WebSocket v5 requests go through the apiserver's stream translator
// (k8s.io/apiserver/pkg/util/proxy.NewStreamTranslatorHandler) into it, as
// in a real apiserver. Behind the streaming server, each "container" is a
// real long-running process (a tether-shim in Tether's tests).
//
// The front handler answers the two API paths a Tether client uses:
//
//	GET      /api/v1/namespaces/NS/pods/POD          a minimal Pod with the container states
//	GET|POST /api/v1/namespaces/NS/pods/POD/attach   attach (WebSocket v5 or SPDY)
//	GET      /api/v1/namespaces/NS/pods/POD/log      the container log (stdout and stderr lines; one of them
//	                                                  with stream=Stdout|Stderr where Options.SplitLogStreams
//	                                                  is set, else stream is refused as an API server without
//	                                                  PodLogsQuerySplitStreams does: 422)
//
// Attach tokens of the streaming server are single-use, so the front
// handler mints one per request (Server.GetAttach), like the kubelet does.
package attachserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	apimachineryproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/rest"
	remotecommandclient "k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubelet/pkg/cri/streaming"
)

// Options configure a Server.
type Options struct {
	// NoWebSocket makes the server behave like an apiserver without the
	// WebSocket stream translator: WebSocket requests are proxied to the
	// streaming server as they are, which cannot speak v5, so clients must
	// fall back to SPDY.
	NoWebSocket bool
	// Logger receives the server's diagnostics; nil discards them.
	Logger *slog.Logger
	// LogLimit bounds each container's log (pods/log) in bytes, dropping
	// the oldest lines like a kubelet's log rotation; 0 keeps everything.
	LogLimit int
	// SplitLogStreams serves pods/log's stream field (Stdout, Stderr,
	// All), as an API server with the PodLogsQuerySplitStreams feature
	// does. Without it a request naming a stream is refused the way such
	// a server refuses it: 422 Invalid, "stream: Forbidden: may not be
	// specified".
	SplitLogStreams bool
}

// Server is the front handler plus the streaming server.
type Server struct {
	// URL is the front handler's base URL ("http://127.0.0.1:PORT"): point a
	// rest.Config (or a fault proxy) at it.
	URL string

	opts      Options
	log       *slog.Logger
	stream    streaming.Server
	front     *http.Server
	backend   *http.Server
	transport *http.Transport

	mu          sync.Mutex
	containers  map[string]*Container
	requests    map[string]int
	logRequests map[string]int
	// userAgents are the User-Agent headers of the requests that reached
	// the front handler, by kind (see UserAgents).
	userAgents map[string][]string
	// deadKubelet is where attaches go while the node is down
	// (SetNodeDown); nil while it is up.
	deadKubelet *url.URL
}

// Start starts the streaming server and the front handler on loopback.
func Start(opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, containers: map[string]*Container{}, requests: map[string]int{}, logRequests: map[string]int{},
		userAgents: map[string][]string{}, transport: &http.Transport{}}

	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("attach server: listen: %w", err)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = bln.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: cfg.Addr, Path: "/"}
	cfg.StreamIdleTimeout = 10 * time.Minute
	s.stream, err = streaming.NewServer(cfg, runtime{s})
	if err != nil {
		bln.Close()
		return nil, fmt.Errorf("attach server: streaming server: %w", err)
	}
	s.backend = &http.Server{Handler: s.stream, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.backend.Serve(bln) }()

	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.backend.Close()
		return nil, fmt.Errorf("attach server: listen: %w", err)
	}
	s.URL = "http://" + fln.Addr().String()
	s.front = &http.Server{Handler: http.HandlerFunc(s.serveAPI), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.front.Serve(fln) }()
	return s, nil
}

// RESTConfig returns a client configuration for the front handler. host
// overrides the URL (e.g. a fault proxy's "http://ADDR"); "" keeps s.URL.
func (s *Server) RESTConfig(host string) *rest.Config {
	if host == "" {
		host = s.URL
	}
	return &rest.Config{Host: host, Timeout: 10 * time.Second}
}

// Close stops both servers (cutting every open connection) and kills every
// container.
func (s *Server) Close() {
	_ = s.front.Close()
	_ = s.backend.Close()
	_ = s.stream.Stop()
	s.transport.CloseIdleConnections()
	s.mu.Lock()
	cs := make([]*Container, 0, len(s.containers))
	for _, c := range s.containers {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.Kill()
	}
}

func key(ns, pod, container string) string { return ns + "/" + pod + "/" + container }

// AddContainer starts cmd as container name of pod ns/pod. A pod has one
// container in this server; adding another container to the same pod
// replaces the pod's default.
func (s *Server) AddContainer(ns, pod, name string, cmd *exec.Cmd) (*Container, error) {
	c, err := startContainer(ns, pod, name, cmd, s.opts.LogLimit)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.containers[key(ns, pod, name)] = c
	s.containers[key(ns, pod, "")] = c
	return c, nil
}

// AttachRequests counts the attach requests that reached the front handler
// for pod ns/pod, by protocol ("websocket" or "spdy").
func (s *Server) AttachRequests(protocol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[protocol]
}

// UserAgents returns the User-Agent headers of the requests that reached
// the front handler, by kind: "pod" (GET the pod), "attach-websocket",
// "attach-spdy" (the upgrade requests) and "log".
func (s *Server) UserAgents() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.userAgents))
	for k, v := range s.userAgents {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// noteUserAgent records r's User-Agent under its kind (UserAgents).
func (s *Server) noteUserAgent(r *http.Request, parts []string) {
	kind := "pod"
	if len(parts) == 7 {
		kind = parts[6]
		if kind == "attach" {
			kind += "-" + attachProtocol(r)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userAgents[kind] = append(s.userAgents[kind], r.UserAgent())
}

func (s *Server) container(ns, pod, name string) *Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.containers[key(ns, pod, name)]
}

// serveAPI is the front handler.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// api v1 namespaces NS pods POD [attach]
	if len(parts) < 6 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" {
		writeStatus(w, apierrors.NewNotFound(corev1.Resource("resource"), r.URL.Path))
		return
	}
	ns, pod := parts[3], parts[5]
	s.noteUserAgent(r, parts)
	switch {
	case len(parts) == 6 && r.Method == http.MethodGet:
		s.servePod(w, ns, pod)
	case len(parts) == 7 && parts[6] == "attach" && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		s.serveAttach(w, r, ns, pod)
	case len(parts) == 7 && parts[6] == "log" && r.Method == http.MethodGet:
		s.serveLog(w, r, ns, pod)
	default:
		writeStatus(w, apierrors.NewMethodNotSupported(corev1.Resource("pods"), r.Method))
	}
}

// serveLog answers GET pods/log with the container log, or one stream of
// it (Options.SplitLogStreams).
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request, ns, pod string) {
	q := r.URL.Query()
	stream, named := q.Get("stream"), q.Has("stream")
	s.mu.Lock()
	s.logRequests[stream]++
	s.mu.Unlock()
	if named && !s.opts.SplitLogStreams {
		writeStatus(w, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("PodLogOptions").GroupKind(), pod,
			field.ErrorList{field.Forbidden(field.NewPath("stream"), "may not be specified")}))
		return
	}
	which := -1
	switch stream {
	case "", corev1.LogStreamAll:
	case corev1.LogStreamStdout:
		which = 0
	case corev1.LogStreamStderr:
		which = 1
	default:
		writeStatus(w, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("PodLogOptions").GroupKind(), pod,
			field.ErrorList{field.NotSupported(field.NewPath("stream"), stream, []string{corev1.LogStreamStdout, corev1.LogStreamStderr, corev1.LogStreamAll})}))
		return
	}
	c := s.container(ns, pod, q.Get("container"))
	if c == nil {
		writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), pod))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(c.logs.bytes(which))
}

// LogRequests counts the pods/log requests that reached the front handler,
// by their stream field ("" for none).
func (s *Server) LogRequests(stream string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logRequests[stream]
}

// servePod answers GET pod with the container's state.
func (s *Server) servePod(w http.ResponseWriter, ns, name string) {
	c := s.container(ns, name, "")
	if c == nil {
		writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), name))
		return
	}
	st := corev1.ContainerStatus{Name: c.Name, Ready: true}
	phase := corev1.PodRunning
	if c.Running() {
		st.State.Running = &corev1.ContainerStateRunning{}
	} else {
		code := int32(c.ExitCode())
		st.Ready = false
		st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed"}
		phase = corev1.PodSucceeded
		if code != 0 {
			st.State.Terminated.Reason = "Error"
			phase = corev1.PodFailed
		}
	}
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: c.Name, Stdin: true}}},
		Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{st}},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&pod)
}

// serveAttach mints a single-use token for the streaming server and
// proxies the request to it: WebSocket v5 through the stream translator,
// everything else through the upgrade-aware proxy, as the apiserver does.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request, ns, pod string) {
	q := r.URL.Query()
	c := s.container(ns, pod, q.Get("container"))
	if c == nil {
		writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), pod))
		return
	}
	if !c.Running() {
		writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("container %s is not running", c.Name)))
		return
	}
	flag := func(k string) bool { return q.Get(k) == "true" || q.Get(k) == "1" }
	req := &runtimeapi.AttachRequest{ContainerId: key(ns, pod, c.Name),
		Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"), Tty: flag("tty")}
	resp, err := s.stream.GetAttach(req)
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	location, err := url.Parse(resp.Url)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	if dead := s.kubeletDown(); dead != nil {
		location = dead.JoinPath(location.Path)
	}
	protocol := "spdy"
	var h http.Handler = apimachineryproxy.NewUpgradeAwareHandler(location, s.transport, false, true, responder{s.log})
	if !s.opts.NoWebSocket && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		protocol = "websocket"
		h = translator.NewStreamTranslatorHandler(location, s.transport, 0,
			translator.Options{Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, Tty: req.Tty})
	} else if wsstream.IsWebSocketRequest(r) {
		protocol = "websocket-legacy"
	}
	s.mu.Lock()
	s.requests[protocol]++
	s.mu.Unlock()
	s.log.Debug("attach", "pod", ns+"/"+pod, "container", c.Name, "protocol", protocol)
	h.ServeHTTP(w, r)
}

type responder struct{ log *slog.Logger }

func (r responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	r.log.Debug("attach proxy error", "err", err)
	writeStatus(w, apierrors.NewInternalError(err))
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}

// runtime is the streaming.Runtime: Attach connects to a Container.
type runtime struct{ s *Server }

func (rt runtime) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommandclient.TerminalSize) error {
	rt.s.mu.Lock()
	c := rt.s.containers[id]
	rt.s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("container %q not found", id)
	}
	var o, e io.Writer
	if out != nil {
		o = out
	}
	if errw != nil {
		e = errw
	}
	return c.attach(ctx, in, o, e)
}

func (runtime) Exec(context.Context, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommandclient.TerminalSize) error {
	return errors.New("exec is not supported by this test server")
}

func (runtime) PortForward(context.Context, string, int32, io.ReadWriteCloser) error {
	return errors.New("port-forward is not supported by this test server")
}

// attachProtocol names an attach request's protocol by its upgrade:
// "websocket" or "spdy".
func attachProtocol(r *http.Request) string {
	if wsstream.IsWebSocketRequest(r) {
		return "websocket"
	}
	return "spdy"
}
