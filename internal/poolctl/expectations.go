package poolctl

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationTTL is how long a create or delete the informer has not
// shown yet is still counted: after it the cache is trusted again (a
// watch event lost for good).
const expectationTTL = time.Minute

// expectations are the creates and deletes the controller sent and the
// informer has not shown yet, as the ReplicaSet controller keeps them:
// a pod asked for counts in its pool before the cache has it, and a pod
// being deleted counts no more, so the pool is never refilled twice.
type expectations struct {
	mu       sync.Mutex
	now      func() time.Time
	creating map[string]map[string]time.Time // pool → pod name → when asked
	deleting map[types.UID]time.Time         // pod UID → when asked
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, creating: map[string]map[string]time.Time{}, deleting: map[types.UID]time.Time{}}
}

// expectCreate counts pod name of pool as being created.
func (e *expectations) expectCreate(pool, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.creating[pool] == nil {
		e.creating[pool] = map[string]time.Time{}
	}
	e.creating[pool][name] = e.now()
}

// created forgets pod name of pool: the informer shows it, or its create
// failed.
func (e *expectations) created(pool, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.creating[pool], name)
}

// pendingCreates is how many pods of pool are being created.
func (e *expectations) pendingCreates(pool string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for name, at := range e.creating[pool] {
		if e.now().Sub(at) > expectationTTL {
			delete(e.creating[pool], name)
			continue
		}
		n++
	}
	return n
}

// expectDelete counts the pod as deleted.
func (e *expectations) expectDelete(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deleting[uid] = e.now()
}

// deleted forgets the pod: the informer shows it terminating or gone, or
// its delete failed.
func (e *expectations) deleted(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.deleting, uid)
}

// isDeleting reports whether the pod is being deleted.
func (e *expectations) isDeleting(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.deleting[uid]
	if ok && e.now().Sub(at) > expectationTTL {
		delete(e.deleting, uid)
		return false
	}
	return ok
}
