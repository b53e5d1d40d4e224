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
	// Arrivals are pods that reach the cluster only once it has settled (Case.Arrivals).
	Arrivals []*v1.Pod
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

// decodeArrivals reads the pods of Case.Arrivals; any other kind is refused.
func decodeArrivals(objects []json.RawMessage) ([]*v1.Pod, error) {
	arrived, err := decodeWorld(objects)
	if err != nil {
		return nil, fmt.Errorf("arrivals: %v", err)
	}
	if len(arrived.Pods) != len(objects) {
		return nil, fmt.Errorf("arrivals: only pods arrive later")
	}
	return arrived.Pods, nil
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
