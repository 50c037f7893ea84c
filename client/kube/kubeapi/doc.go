// Package kubeapi is the part of the Kubernetes API that Tether calls:
// pods (with their logs, attach and ephemeral containers), events,
// secrets, config maps, nodes, pod disruption budgets and the
// self-subject access, rules and identity reviews.
//
// Interface has the shape of client-go's kubernetes.Interface, with
// exactly its method signatures, so code written against the typed
// clientset reads the same (cs.CoreV1().Pods(ns).Get(ctx, name, opts)).
// New builds its own implementation over client-go's rest client with a
// scheme of only the API groups above (core/v1, policy/v1,
// authorization/v1, authentication/v1): a program that uses it does not link the typed
// clientset, whose scheme registers every built-in API group at each
// start of the process (tens of milliseconds for a short command).
//
// On the wire it is client-go's generated clients' requests: the same
// paths, query parameters and bodies, protobuf unless the rest.Config
// names a content type.
//
// A program that already holds a client-go clientset (or a test with
// client-go's fake clientset) wraps it with the clientset sub-package:
// clientset.Wrap(cs).
package kubeapi
