package main

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
)

// World is a cluster snapshot: the objects Volcano's scheduler cache is built from.
type World struct {
	Nodes           []*v1.Node
	Pods            []*v1.Pod
	PodGroups       []*schedulingv1beta1.PodGroup
	Queues          []*schedulingv1beta1.Queue
	HyperNodes      []*topologyv1alpha1.HyperNode
	PriorityClasses []*schedulingv1.PriorityClass
	// Arrivals are waves of pods and PodGroups, each reaching the cluster once it has settled
	// without it (Case.Arrivals, then Case.Waves).
	Arrivals []Wave
}

// Wave is what reaches the cluster at once.
type Wave struct {
	Pods      []*v1.Pod
	PodGroups []*schedulingv1beta1.PodGroup
}

// decodeWorld reads objects by kind; kinds the scheduler does not read are refused, so a caller
// learns that what it sent was not looked at.
func decodeWorld(objects []json.RawMessage) (*World, error) {
	w := &World{}
	for i, raw := range objects {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("object %d: %v", i, err)
		}
		var err error
		switch head.Kind {
		case "Node":
			w.Nodes, err = appendDecoded(w.Nodes, raw)
		case "Pod":
			w.Pods, err = appendDecoded(w.Pods, raw)
		case "PodGroup":
			w.PodGroups, err = appendDecoded(w.PodGroups, raw)
		case "Queue":
			w.Queues, err = appendDecoded(w.Queues, raw)
		case "HyperNode":
			w.HyperNodes, err = appendDecoded(w.HyperNodes, raw)
		case "PriorityClass":
			w.PriorityClasses, err = appendDecoded(w.PriorityClasses, raw)
		default:
			return nil, fmt.Errorf("object %d: kind %q is not read by the scheduler", i, head.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("object %d (%s): %v", i, head.Kind, err)
		}
	}
	return w, nil
}

// appendDecoded decodes one object of type T and appends it.
func appendDecoded[T any](list []*T, raw json.RawMessage) ([]*T, error) {
	obj := new(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		return list, err
	}
	return append(list, obj), nil
}

// decodeArrivals reads the waves of Case.Arrivals (pods only) and Case.Waves (pods and their
// PodGroups), leaving out empty ones; any other kind is refused.
func decodeArrivals(first []json.RawMessage, later [][]json.RawMessage) ([]Wave, error) {
	var waves []Wave
	for i, objects := range append([][]json.RawMessage{first}, later...) {
		arrived, err := decodeWorld(objects)
		if err != nil {
			return nil, fmt.Errorf("arrivals (wave %d): %v", i, err)
		}
		if len(arrived.Pods)+len(arrived.PodGroups) != len(objects) || (i == 0 && len(arrived.PodGroups) > 0) {
			return nil, fmt.Errorf("arrivals (wave %d): only pods, and PodGroups in later waves, arrive later", i)
		}
		if len(objects) > 0 {
			waves = append(waves, Wave{arrived.Pods, arrived.PodGroups})
		}
	}
	return waves, nil
}

// clone copies the objects a run changes (pods and PodGroups), so repeats start alike; arrivals
// are copied when they arrive.
func (w *World) clone() *World {
	out := *w
	out.Pods = make([]*v1.Pod, len(w.Pods))
	for i, p := range w.Pods {
		out.Pods[i] = p.DeepCopy()
	}
	out.PodGroups = make([]*schedulingv1beta1.PodGroup, len(w.PodGroups))
	for i, pg := range w.PodGroups {
		out.PodGroups[i] = pg.DeepCopy()
	}
	return &out
}

func key(namespace, name string) string { return namespace + "/" + name }
