package kubeapi

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is an API object with a name.
type object interface {
	runtime.Object
	GetName() string
}

// resource is one resource of one API group in one namespace (none for
// a cluster-scoped resource), reached through the group's rest client:
// each method makes the request client-go's generated client makes.
type resource[T object, L runtime.Object] struct {
	client    rest.Interface
	params    runtime.ParameterCodec
	namespace string
	name      string
	newObject func() T
	newList   func() L
}

// request starts a request for the resource. Like client-go's generated
// clients of the built-in types, it asks for protobuf (then JSON) and
// sends protobuf unless the rest.Config sets a content type.
func (r *resource[T, L]) request(verb string) *rest.Request {
	return r.client.Verb(verb).UseProtobufAsDefault().
		NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.name)
}

// Get returns the object called name.
func (r *resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObject()
	err := r.request("GET").Name(name).VersionedParams(&opts, r.params).Do(ctx).Into(out)
	return out, err
}

// List returns the objects opts selects.
func (r *resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.request("GET").VersionedParams(&opts, r.params).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the objects opts selects.
func (r *resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.request("GET").VersionedParams(&opts, r.params).Timeout(timeoutOf(opts)).Watch(ctx)
}

// Create creates obj and returns it as the server stored it.
func (r *resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObject()
	err := r.request("POST").VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Update replaces obj (a conflict when its resourceVersion is not the
// stored one) and returns it as the server stored it.
func (r *resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObject()
	err := r.request("PUT").Name(obj.GetName()).VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the object called name.
func (r *resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request("DELETE").Name(name).Body(&opts).Do(ctx).Error()
}

func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
