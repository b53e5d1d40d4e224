package main

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	listerv1 "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"volcano.sh/apis/pkg/apis/scheduling"
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

// session runs one scheduling cycle on the world, as the binary's runOnce does
// (pkg/scheduler/scheduler.go): open a session on the cache, execute each action, close it.
func session(w *World, p Policy) (Cycle, error) {
	binder := util.NewFakeBinder(len(w.Pods) + 1)
	evictor := util.NewFakeEvictor(len(w.Pods) + 1)
	// A FakeRecorder without a channel drops events; with one, a full channel would block the cache.
	sc := cache.NewCustomMockSchedulerCache(SchedulerName, binder, evictor, &util.FakeStatusUpdater{}, nil, &record.FakeRecorder{})
	stop := make(chan struct{})
	defer close(stop)
	sc.Run(stop)

	// HyperNode members given by regex or label are matched against the node lister.
	nodes := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, node := range w.Nodes {
		if err := nodes.Add(node); err != nil {
			return Cycle{}, err
		}
		if err := sc.AddOrUpdateNode(node.DeepCopy()); err != nil {
			return Cycle{}, fmt.Errorf("node %s: %v", node.Name, err)
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
		// The binary's pod informer passes only its own pods and pods already on a node
		// (pkg/scheduler/cache/cache.go, addEventHandler); AddPod itself takes any pod.
		if pod.Spec.SchedulerName == SchedulerName || pod.Spec.NodeName != "" {
			sc.AddPod(pod.DeepCopy()) // the scheduler writes to the pods it holds
		}
	}
	for _, pg := range w.PodGroups {
		sc.AddPodGroupV1beta1(pg.DeepCopy())
	}
	for _, hn := range w.HyperNodes {
		sc.HyperNodesInfo.Lock()
		err := sc.HyperNodesInfo.UpdateHyperNode(hn.DeepCopy())
		sc.HyperNodesInfo.Unlock()
		if err != nil {
			return Cycle{}, fmt.Errorf("hypernode %s: %v", hn.Name, err)
		}
	}

	conf.EnabledActionMap = make(map[string]bool, len(p.Actions))
	for _, action := range p.Actions {
		conf.EnabledActionMap[action.Name()] = true
	}
	ssn := framework.OpenSession(sc, p.Tiers, p.Configurations)
	releasing := map[api.TaskID]bool{}
	for _, job := range ssn.Jobs {
		for id := range job.TaskStatusIndex[api.Releasing] {
			releasing[id] = true
		}
	}
	for _, action := range p.Actions {
		action.Execute(ssn)
	}
	jobs := ssn.Jobs
	framework.CloseSession(ssn)

	out := Cycle{
		Binds:      map[string]string{},
		Evictions:  []string{},
		Pipelined:  map[string][]string{},
		Phases:     map[string]string{},
		Conditions: map[string]string{},
	}
	wantBinds, wantEvicts := 0, 0
	for id, job := range jobs {
		wantBinds += len(job.TaskStatusIndex[api.Binding])
		for taskID := range job.TaskStatusIndex[api.Releasing] {
			if !releasing[taskID] {
				wantEvicts++
			}
		}
		for _, task := range job.TaskStatusIndex[api.Pipelined] {
			out.Pipelined[string(id)] = append(out.Pipelined[string(id)], task.NodeName)
		}
		if job.PodGroup != nil {
			out.Phases[string(id)] = string(job.PodGroup.Status.Phase)
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
