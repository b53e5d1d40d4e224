package main

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/actions" // registers every action
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	_ "volcano.sh/volcano/pkg/scheduler/plugins" // registers every plugin
)

// maxCycles bounds the cycles of one run whatever the case asks (a case whose models arrive one
// at a time, Case.Waves, takes a few cycles per wave).
const maxCycles = 256

func run(c Case) Answer {
	answer := Answer{ID: c.ID}
	policy, err := parsePolicy(c.Conf, c.Defaults)
	if err != nil && c.Fallback && c.Defaults {
		answer.PolicyRefused = err.Error()
		policy, err = parsePolicy(scheduler.DefaultSchedulerConf, true)
	}
	if err != nil {
		answer.Error = "policy: " + err.Error()
		return answer
	}
	world, err := decodeWorld(c.Objects)
	if err == nil {
		world.Arrivals, err = decodeArrivals(c.Arrivals, c.Waves)
	}
	if err != nil {
		answer.Error = err.Error()
		return answer
	}
	cycles := min(max(c.Cycles, 1), maxCycles)
	seen := map[string]int{}
	for i := 0; i < max(c.Repeat, 1); i++ {
		outcome, err := settle(world.clone(), policy, cycles)
		if err != nil {
			answer.Error = err.Error()
			return answer
		}
		k := outcome.key()
		if at, ok := seen[k]; ok {
			answer.Outcomes[at].Runs++
			continue
		}
		outcome.Runs = 1
		seen[k] = len(answer.Outcomes)
		answer.Outcomes = append(answer.Outcomes, outcome)
	}
	answer.Random = len(answer.Outcomes) > 1
	return answer
}

// parsePolicy reads a scheduler configuration. With defaults it is scheduler.UnmarshalSchedulerConf,
// the binary's reading; without, the same YAML with every flag left out off, as the unit tests
// build their tiers.
func parsePolicy(text string, defaults bool) (Policy, error) {
	if defaults {
		actions, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(text)
		return Policy{actions, tiers, configurations}, err
	}
	parsed := &conf.SchedulerConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(text), parsed); err != nil { // a misspelt flag is an error here
		return Policy{}, err
	}

	var actions []framework.Action
	for _, name := range strings.Split(parsed.Actions, ",") {
		action, found := framework.GetAction(strings.TrimSpace(name))
		if !found {
			return Policy{}, fmt.Errorf("failed to find Action %s", name)
		}
		actions = append(actions, action)
	}
	return Policy{actions, parsed.Tiers, parsed.Configurations}, nil
}

// settle runs cycles until one binds and evicts nothing, or evicts the same pods as an earlier
// one; then the world's next wave of arrivals comes and it runs on until that happens again.
// Between cycles the world changes as the cluster would: bound pods run, evicted pods are
// recreated Pending by their controllers, PodGroups keep the phase the session wrote; each change
// reaches the one cache of the run as an informer event.
func settle(w *World, p Policy, cycles int) (Outcome, error) {
	out := Outcome{Pods: map[string]string{}, Phases: map[string]string{}, Evicted: []string{}}
	s, err := newScheduler(w)
	if err != nil {
		return out, err
	}
	defer s.close()
	seen := map[string]bool{}
	for i := 0; i < cycles; i++ {
		cycle, err := s.cycle(w, p)
		if err != nil {
			return out, fmt.Errorf("cycle %d: %v", i+1, err)
		}
		out.Cycles = append(out.Cycles, cycle)
		out.Evicted = append(out.Evicted, cycle.Evictions...)
		apply(w, s, cycle, i+1)
		evicted := append([]string{}, cycle.Evictions...)
		sort.Strings(evicted)
		signature := strings.Join(evicted, ",")
		settled := (len(cycle.Binds) == 0 && len(evicted) == 0) || (len(evicted) > 0 && seen[signature])
		if settled && len(w.Arrivals) == 0 {
			break
		}
		if settled {
			arrive(w, s)
			seen = map[string]bool{}
			continue
		}
		seen[signature] = true
	}
	for _, pod := range w.Pods {
		node := "" // a pod being deleted is leaving its node
		if pod.DeletionTimestamp == nil && (pod.Status.Phase == v1.PodRunning || pod.Status.Phase == v1.PodPending) {
			node = pod.Spec.NodeName
		}
		out.Pods[key(pod.Namespace, pod.Name)] = node
	}
	for _, pg := range w.PodGroups {
		out.Phases[key(pg.Namespace, pg.Name)] = string(pg.Status.Phase)
	}
	return out, nil
}

// arrive adds the world's next wave of arrivals to it and to the scheduler's cache, as the
// informer would.
func arrive(w *World, s *Scheduler) {
	wave := w.Arrivals[0]
	for _, pg := range wave.PodGroups { // first, so no pod of the wave is met without its PodGroup
		arrived := pg.DeepCopy()
		w.PodGroups = append(w.PodGroups, arrived)
		s.cache.AddPodGroupV1beta1(arrived.DeepCopy())
	}
	for _, pod := range wave.Pods {
		arrived := pod.DeepCopy()
		w.Pods = append(w.Pods, arrived)
		s.addPod(arrived)
	}
	w.Arrivals = w.Arrivals[1:]
}

// apply carries one cycle's decisions into the world and the scheduler's cache.
func apply(w *World, s *Scheduler, c Cycle, n int) {
	evicted := map[string]bool{}
	for _, name := range c.Evictions {
		evicted[name] = true
	}
	for i, old := range w.Pods {
		name := key(old.Namespace, old.Name)
		if node, ok := c.Binds[name]; ok {
			pod := old.DeepCopy()
			pod.Spec.NodeName = node
			pod.Status.Phase = v1.PodRunning
			w.Pods[i] = pod
			s.updatePod(old, pod)
		} else if evicted[name] {
			pod := old.DeepCopy()
			pod.UID = types.UID(fmt.Sprintf("%s-recreated-%d", pod.UID, n))
			pod.Spec.NodeName = ""
			pod.DeletionTimestamp = nil
			pod.Status = v1.PodStatus{Phase: v1.PodPending}
			w.Pods[i] = pod
			s.deletePod(old)
			s.addPod(pod)
		}
	}
	for i, old := range w.PodGroups {
		id := key(old.Namespace, old.Name)
		phase, ok := c.Phases[id]
		if !ok || phase == "" {
			continue
		}
		pg := old.DeepCopy()
		pg.Status.Phase = schedulingv1beta1.PodGroupPhase(phase)
		if annotations := c.annotations[id]; len(annotations) > 0 {
			pg.Annotations = annotations
		}
		w.PodGroups[i] = pg
		s.updatePodGroup(old, pg)
	}
}
