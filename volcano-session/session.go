package main

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	listerv1 "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"volcano.sh/apis/pkg/apis/scheduling"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// SchedulerName is the name the cache answers to: pods for another scheduler only hold their
// node's resources (pkg/scheduler/cache/cache.go, the pod informer's filter).
const SchedulerName = "volcano"

// drainTimeout bounds the wait for the cache's bind and evict goroutines.
const drainTimeout = 30 * time.Second

// Policy is a parsed scheduler configuration.
type Policy struct {
	Actions        []framework.Action
	Tiers          []conf.Tier
	Configurations []conf.Configuration
}

// Scheduler is one scheduler cache, built from a world once and kept across the cycles of a run,
// as the binary keeps its cache across sessions (pkg/scheduler/scheduler.go, runOnce): between
// cycles the changes reach it through the event handlers its informers call, so what the cache
// keeps of its own between sessions (a gang's allocated HyperNode, `updateJobInfo` in
// pkg/scheduler/cache/cache.go) is kept here too.
type Scheduler struct {
	cache *cache.SchedulerCache
	stop  chan struct{}
	// version numbers the PodGroup updates; the cache skips an update whose resourceVersion did
	// not change (`UpdatePodGroupV1beta1`, pkg/scheduler/cache/event_handlers.go).
	version int
}

// newScheduler fills a cache with the world's objects through the handlers the informers call.
func newScheduler(w *World) (*Scheduler, error) {
	sc := cache.NewCustomMockSchedulerCache(SchedulerName, util.NewFakeBinder(0), util.NewFakeEvictor(0),
		&util.FakeStatusUpdater{}, nil, &record.FakeRecorder{})
	s := &Scheduler{cache: sc, stop: make(chan struct{})}
	sc.Run(s.stop)

	// HyperNode members given by regex or label are matched against the node lister.
	nodes := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, node := range w.Nodes {
		if err := nodes.Add(node); err != nil {
			s.close()
			return nil, err
		}
		if err := sc.AddOrUpdateNode(node.DeepCopy()); err != nil {
			s.close()
			return nil, fmt.Errorf("node %s: %v", node.Name, err)
		}
	}
	sc.HyperNodesInfo = api.NewHyperNodesInfo(listerv1.NewNodeLister(nodes))
	for _, pc := range w.PriorityClasses {
		sc.AddPriorityClass(pc)
	}
	for _, q := range w.Queues {
		sc.AddQueueV1beta1(q.DeepCopy())
	}
	for _, pod := range w.Pods {
		s.addPod(pod)
	}
	for _, pg := range w.PodGroups {
		sc.AddPodGroupV1beta1(pg.DeepCopy())
	}
	for _, hn := range w.HyperNodes {
		sc.HyperNodesInfo.Lock()
		err := sc.HyperNodesInfo.UpdateHyperNode(hn.DeepCopy())
		sc.HyperNodesInfo.Unlock()
		if err != nil {
			s.close()
			return nil, fmt.Errorf("hypernode %s: %v", hn.Name, err)
		}
	}
	return s, nil
}

func (s *Scheduler) close() { close(s.stop) }

// watched says whether the binary's pod informer passes a pod: its own pods and pods already on
// a node (pkg/scheduler/cache/cache.go, addEventHandler); AddPod itself takes any pod.
func watched(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName == SchedulerName || pod.Spec.NodeName != ""
}

func (s *Scheduler) addPod(pod *v1.Pod) {
	if watched(pod) {
		s.cache.AddPod(pod.DeepCopy()) // the scheduler writes to the pods it holds
	}
}

// updatePod is the informer's update event: delete and add when the filter's answer changes.
func (s *Scheduler) updatePod(old, pod *v1.Pod) {
	switch {
	case watched(old) && watched(pod):
		s.cache.UpdatePod(old.DeepCopy(), pod.DeepCopy())
	case watched(old):
		s.cache.DeletePod(old.DeepCopy())
	default:
		s.addPod(pod)
	}
}

func (s *Scheduler) deletePod(pod *v1.Pod) {
	if watched(pod) {
		s.cache.DeletePod(pod.DeepCopy())
	}
}

func (s *Scheduler) updatePodGroup(old, pg *schedulingv1beta1.PodGroup) {
	s.version++
	before, after := old.DeepCopy(), pg.DeepCopy()
	before.ResourceVersion = strconv.Itoa(2 * s.version)
	after.ResourceVersion = strconv.Itoa(2*s.version + 1)
	s.cache.UpdatePodGroupV1beta1(before, after)
}

// cycle runs one scheduling cycle, as the binary's runOnce does: open a session on the cache,
// execute each action, close it. Binds and evictions are counted per cycle by a fresh fake
// binder and evictor.
func (s *Scheduler) cycle(w *World, p Policy) (Cycle, error) {
	binder := util.NewFakeBinder(len(w.Pods) + 1)
	evictor := util.NewFakeEvictor(len(w.Pods) + 1)
	s.cache.Binder, s.cache.Evictor = binder, evictor

	conf.EnabledActionMap = make(map[string]bool, len(p.Actions))
	for _, action := range p.Actions {
		conf.EnabledActionMap[action.Name()] = true
	}
	releasing := s.tasksIn(api.Releasing)
	ssn := framework.OpenSession(s.cache, p.Tiers, p.Configurations)
	for _, action := range p.Actions {
		action.Execute(ssn)
	}
	jobs := ssn.Jobs
	framework.CloseSession(ssn)

	out := Cycle{
		Binds:       map[string]string{},
		Evictions:   []string{},
		Pipelined:   map[string][]string{},
		Phases:      map[string]string{},
		Conditions:  map[string]string{},
		annotations: map[string]map[string]string{},
	}
	// What the cycle sent is what the cache holds, not what the session ends with: a later action
	// can pipeline a task an earlier one already sent to bind (its simulation in the session),
	// and the bind still goes out (AddBindTask, pkg/scheduler/cache/cache.go). Every bind of an
	// earlier cycle has been applied, so the cache's Binding tasks are this cycle's.
	binding := s.tasksIn(api.Binding)
	wantBinds, wantEvicts := len(binding), 0
	for id := range s.tasksIn(api.Releasing) {
		if !releasing[id] {
			wantEvicts++
		}
	}
	for id, job := range jobs {
		for taskID, task := range job.TaskStatusIndex[api.Pipelined] {
			if !binding[taskID] {
				out.Pipelined[string(id)] = append(out.Pipelined[string(id)], task.NodeName)
			}
		}
		if job.PodGroup != nil {
			out.Phases[string(id)] = string(job.PodGroup.Status.Phase)
			out.annotations[string(id)] = job.PodGroup.GetAnnotations()
			for _, c := range job.PodGroup.Status.Conditions {
				if c.Type == scheduling.PodGroupUnschedulableType && c.Status == v1.ConditionTrue {
					out.Conditions[string(id)] = c.Message
				}
			}
		}
	}
	if err := drain(binder.Channel, wantBinds, "bind"); err != nil {
		return out, err
	}
	if err := drain(evictor.Channel, wantEvicts, "evict"); err != nil {
		return out, err
	}
	out.Binds = binder.Binds()
	out.Evictions = evictor.Evicts()
	out.EvictedFrom = map[string]string{}
	evicted := map[string]bool{}
	for _, name := range out.Evictions {
		evicted[name] = true
	}
	for _, pod := range w.Pods {
		if name := key(pod.Namespace, pod.Name); evicted[name] {
			out.EvictedFrom[name] = pod.Spec.NodeName
		}
	}
	return out, nil
}

// tasksIn returns the tasks the cache holds in a status.
func (s *Scheduler) tasksIn(status api.TaskStatus) map[api.TaskID]bool {
	s.cache.Mutex.Lock()
	defer s.cache.Mutex.Unlock()
	found := map[api.TaskID]bool{}
	for _, job := range s.cache.Jobs {
		for id := range job.TaskStatusIndex[status] {
			found[id] = true
		}
	}
	return found
}

// drain waits for the n requests the session committed; the cache sends them from goroutines.
func drain(channel chan string, n int, what string) error {
	deadline := time.After(drainTimeout)
	for i := 0; i < n; i++ {
		select {
		case <-channel:
		case <-deadline:
			return fmt.Errorf("%d of %d %s requests arrived in %s", i, n, what, drainTimeout)
		}
	}
	return nil
}
