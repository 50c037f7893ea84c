package gc

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// Kind is a resource the cleaner handles.
type Kind string

// The kinds the cleaner handles, in the order it processes them.
const (
	KindPod       Kind = "pod"
	KindConfigMap Kind = "configmap"
	KindSecret    Kind = "secret"
)

// AllKinds returns every Kind in processing order: pods first, then the
// objects that pods own.
func AllKinds() []Kind { return []Kind{KindPod, KindConfigMap, KindSecret} }

// ParseKind accepts a kind's singular or plural name ("pod", "pods", …).
func ParseKind(s string) (Kind, error) {
	for _, k := range AllKinds() {
		if s == string(k) || s == string(k)+"s" {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown resource %q: want pods, configmaps or secrets", s)
}

// Plural is the resource name as in RBAC rules and API paths.
func (k Kind) Plural() string { return string(k) + "s" }

func (k Kind) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: k.Plural()}
}

// Store is the part of the Kubernetes API the cleaner uses: object metadata
// only (a Secret's data never leaves the apiserver). The production Store is
// NewStore; tests use a fake that honours pagination and UID preconditions.
type Store interface {
	// List returns one page of objects; namespace "" lists all namespaces.
	List(ctx context.Context, kind Kind, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	// Get returns one object's metadata or a NotFound API error.
	Get(ctx context.Context, kind Kind, namespace, name string) (*metav1.PartialObjectMetadata, error)
	// Delete deletes one object; opts carry the UID precondition.
	Delete(ctx context.Context, kind Kind, namespace, name string, opts metav1.DeleteOptions) error
}

// NewStore returns a Store backed by client-go's metadata client.
func NewStore(client metadata.Interface) Store { return metaStore{client} }

type metaStore struct{ client metadata.Interface }

func (s metaStore) List(ctx context.Context, kind Kind, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return s.client.Resource(kind.gvr()).Namespace(namespace).List(ctx, opts)
}

func (s metaStore) Get(ctx context.Context, kind Kind, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	return s.client.Resource(kind.gvr()).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s metaStore) Delete(ctx context.Context, kind Kind, namespace, name string, opts metav1.DeleteOptions) error {
	return s.client.Resource(kind.gvr()).Namespace(namespace).Delete(ctx, name, opts)
}
