package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// What logStreams knows about the API server.
const (
	splitUnknown int32 = iota // not asked yet
	splitYes                  // it returned stdout alone
	splitNo                   // it refused the stream field
)

// logStreams reads a shim container's log (pods/log) and remembers whether
// the API server returns one stream of it. The shim's stderr (its
// diagnostics) goes to the same log as its record stream, and the runtime
// logs whichever line completes first: a diagnostic can land inside a
// block record's payload, which then no longer decodes. So the log is asked
// for stdout alone (the stream field), which an API server with the
// PodLogsQuerySplitStreams feature serves; one without it refuses the field
// (422, "stream: Forbidden: may not be specified"), and then the log is
// asked for again as a whole. The answer is kept, so the next log costs
// one request. Safe for concurrent use; the zero value knows nothing yet.
type logStreams struct {
	split atomic.Int32
}

// open returns the log of container of pod ns/name: its stdout where the
// API server can split the streams, else stdout and stderr as the runtime
// logged them.
func (s *logStreams) open(ctx context.Context, cs kubeapi.Interface, ns, name, container string, log *slog.Logger) (io.ReadCloser, error) {
	pods := cs.CoreV1().Pods(ns)
	if s.split.Load() != splitNo {
		stdout := corev1.LogStreamStdout
		rc, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: container, Stream: &stdout}).Stream(ctx)
		if err == nil {
			s.split.Store(splitYes)
			return rc, nil
		}
		if !streamRefused(err) {
			return nil, fmt.Errorf("read the stdout log of container %s of pod %s/%s: %w", container, ns, name, err)
		}
		s.split.Store(splitNo)
		log.Debug("the API server cannot return the log's stdout alone (PodLogsQuerySplitStreams off): reading stdout and stderr together",
			"pod", ns+"/"+name)
	}
	rc, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the log of container %s of pod %s/%s: %w", container, ns, name, err)
	}
	return rc, nil
}

// streamRefused reports whether err is an API server's refusal of
// PodLogOptions' stream field, which it gives without the
// PodLogsQuerySplitStreams feature: 422 Invalid, kind PodLogOptions, a
// FieldValueForbidden cause on field "stream". Any other error (the pod
// gone, RBAC, another invalid field) is not.
func streamRefused(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	if d == nil || d.Kind != "PodLogOptions" {
		return false
	}
	for _, c := range d.Causes {
		if c.Field == "stream" && c.Type == metav1.CauseType(field.ErrorTypeForbidden) {
			return true
		}
	}
	return false
}
