package kube

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Only the API server's refusal of the stream field means "read the whole
// log instead"; every other error is the log's failure.
func TestStreamRefused(t *testing.T) {
	logOptions := corev1.SchemeGroupVersion.WithKind("PodLogOptions").GroupKind()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", apierrors.NewInvalid(logOptions, "p", field.ErrorList{field.Forbidden(field.NewPath("stream"), "may not be specified")}), true},
		{"refused, wrapped", fmt.Errorf("read: %w", apierrors.NewInvalid(logOptions, "p", field.ErrorList{field.Forbidden(field.NewPath("stream"), "may not be specified")})), true},
		{"another field", apierrors.NewInvalid(logOptions, "p", field.ErrorList{field.Forbidden(field.NewPath("tailLines"), "x")}), false},
		{"stream not supported", apierrors.NewInvalid(logOptions, "p", field.ErrorList{field.NotSupported(field.NewPath("stream"), "X", []string{"Stdout"})}), false},
		{"another kind", apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "p", field.ErrorList{field.Forbidden(field.NewPath("stream"), "x")}), false},
		{"not found", apierrors.NewNotFound(corev1.Resource("pods"), "p"), false},
		{"forbidden", apierrors.NewForbidden(corev1.Resource("pods/log"), "p", errors.New("no")), false},
		{"plain", errors.New("stream: Forbidden: may not be specified"), false},
	} {
		if got := streamRefused(tc.err); got != tc.want {
			t.Errorf("%s: streamRefused(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
