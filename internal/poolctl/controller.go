package poolctl

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/tether-ci/tether/internal/contract"
)

// EventComponent is the source of the controller's Events.
const EventComponent = "tether-pool"

// Controller keeps the pools' warm pods. Make it with New, run it with
// Run.
type Controller struct {
	opts    Options
	pools   *poolSet
	metrics *Metrics
}

// New checks opts and returns a Controller.
func New(opts Options) (*Controller, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ps, err := newPoolSet(o.Namespace, o.Pools)
	if err != nil {
		return nil, err
	}
	return &Controller{opts: o, pools: ps, metrics: o.Metrics}, nil
}

// Run campaigns for the Lease and, while this replica leads, keeps the
// pools; it campaigns again after losing the lead, and returns when ctx
// ends (releasing the Lease if it holds it).
func (c *Controller) Run(ctx context.Context) error {
	if c.opts.ConfigPath != "" {
		go c.reloadLoop(ctx)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: c.opts.LeaseName},
		Client:     c.opts.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.opts.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   c.opts.LeaseDuration,
			RenewDeadline:   c.opts.RenewDeadline,
			RetryPeriod:     c.opts.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            c.opts.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					c.metrics.Leader.Set(1)
					defer c.metrics.Leader.Set(0)
					c.opts.Log.Info("leading: keeping the pools", "identity", c.opts.Identity, "lease", c.opts.Namespace+"/"+c.opts.LeaseName)
					if err := c.lead(ctx); err != nil && ctx.Err() == nil {
						c.opts.Log.Error("the pools' controller stopped", "err", err)
					}
				},
				OnStoppedLeading: func() {
					c.opts.Log.Info("not leading", "identity", c.opts.Identity)
				},
				OnNewLeader: func(id string) {
					if id != c.opts.Identity {
						c.opts.Log.Info("another replica leads", "leader", id)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("poolctl: leader election: %w", err)
		}
		le.Run(ctx)
	}
	return nil
}

// leader is one term of leadership: its informer, queue, expectations,
// back-offs and Event recorder, gone when the term ends.
type leader struct {
	*Controller
	ctx      context.Context
	lister   corelisters.PodLister
	queue    workqueue.TypedRateLimitingInterface[string]
	exp      *expectations
	recorder record.EventRecorder
	lease    *coordinationv1.Lease

	mu       sync.Mutex
	backoffs map[string]*backoff    // pool → its create back-off (worker only)
	marking  map[string]bool        // pod names being marked ready
	claims   map[string][]time.Time // pool → claims not refilled yet
}

// lead keeps the pools until ctx ends (the lead lost or the process
// stopping).
func (c *Controller) lead(ctx context.Context) error {
	ns := c.opts.Namespace
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.opts.Client.CoreV1().Events(ns)})
	defer broadcaster.Shutdown()
	l := &leader{
		Controller: c,
		ctx:        ctx,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tether-pool"}),
		exp:      newExpectations(c.opts.Now),
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent}),
		backoffs: map[string]*backoff{},
		marking:  map[string]bool{},
		claims:   map[string][]time.Time{},
	}
	defer l.queue.ShutDown()
	lease, err := c.opts.Client.CoordinationV1().Leases(ns).Get(ctx, c.opts.LeaseName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the Lease %s/%s to report on: %w", ns, c.opts.LeaseName, err)
	}
	l.lease = lease

	factory := informers.NewSharedInformerFactoryWithOptions(c.opts.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = contract.LabelManagedBy + "=" + contract.ManagedByValue + "," + contract.LabelPool
		}))
	podInformer := factory.Core().V1().Pods()
	l.lister = podInformer.Lister()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    l.podAdded,
		UpdateFunc: l.podUpdated,
		DeleteFunc: l.podDeleted,
	}); err != nil {
		return fmt.Errorf("watch the pools' pods: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced) {
		return fmt.Errorf("the pools' pods in %s were never listed: %w", ns, context.Cause(ctx))
	}
	if err := l.watchMisses(ctx, c.opts.Now()); err != nil {
		return err
	}
	// Every pool of the file and every pool a pod names: removed pools'
	// pods are deleted too.
	for _, name := range c.pools.names() {
		l.queue.Add(name)
	}
	pods, _ := l.lister.Pods(ns).List(everything())
	for _, p := range pods {
		l.queue.Add(p.Labels[contract.LabelPool])
	}
	stopReload := c.pools.onChange(func(names []string) {
		for _, n := range names {
			l.queue.Add(n)
		}
	})
	defer stopReload()
	go func() {
		<-ctx.Done()
		l.queue.ShutDown()
	}()
	for l.next() {
	}
	return nil
}

// next syncs one pool from the queue; false when the queue shut down.
func (l *leader) next() bool {
	name, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(name)
	again, err := l.sync(l.ctx, name)
	switch {
	case err != nil:
		l.opts.Log.Warn("pool sync failed; trying again", "pool", name, "err", err)
		l.queue.AddRateLimited(name)
	case again > 0:
		l.queue.Forget(name)
		l.queue.AddAfter(name, again)
	default:
		l.queue.Forget(name)
	}
	return true
}

// podAdded: the cache shows a pod; a create expected is done.
func (l *leader) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := pod.Labels[contract.LabelPool]
	l.exp.created(name, pod.Name)
	if pod.DeletionTimestamp != nil {
		l.exp.deleted(pod.UID)
	}
	l.queue.Add(name)
}

// podUpdated: a claim (starting or idle → claimed), a pod made idle, a
// pod terminating.
func (l *leader) podUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	name := pod.Labels[contract.LabelPool]
	was, is := old.Labels[contract.LabelWarm], pod.Labels[contract.LabelWarm]
	if was != contract.WarmClaimed && is == contract.WarmClaimed {
		l.claimed(name, pod)
	}
	if was != contract.WarmIdle && is == contract.WarmIdle {
		l.refilled(name)
	}
	if pod.DeletionTimestamp != nil {
		l.exp.deleted(pod.UID)
	}
	l.queue.Add(name)
}

// podDeleted: a pod gone.
func (l *leader) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	l.exp.deleted(pod.UID)
	l.queue.Add(pod.Labels[contract.LabelPool])
}

// claimed records a claim: the metric, an Event on the pod and the time,
// for the refill's.
func (l *leader) claimed(name string, pod *corev1.Pod) {
	l.metrics.Claims.WithLabelValues(name).Inc()
	l.mu.Lock()
	l.claims[name] = append(l.claims[name], l.opts.Now())
	l.mu.Unlock()
	l.recorder.AnnotatedEventf(pod, map[string]string{contract.LabelPool: name}, corev1.EventTypeNormal, contract.EventWarmClaimed,
		"claimed from pool %s by job %s", name, pod.Labels[contract.LabelJob])
}

// refilled: a pod of the pool became idle; the oldest claim not refilled
// yet is.
func (l *leader) refilled(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.claims[name]
	if len(q) == 0 {
		return
	}
	l.metrics.Refill.WithLabelValues(name).Observe(l.opts.Now().Sub(q[0]).Seconds())
	l.claims[name] = q[1:]
}

// podRef is enough of a pod for an Event about it.
func podRef(ns, name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
}
