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
			obj := &v1.Node{}
			err = json.Unmarshal(raw, obj)
			w.Nodes = append(w.Nodes, obj)
		case "Pod":
			obj := &v1.Pod{}
			err = json.Unmarshal(raw, obj)
			w.Pods = append(w.Pods, obj)
		case "PodGroup":
			obj := &schedulingv1beta1.PodGroup{}
			err = json.Unmarshal(raw, obj)
			w.PodGroups = append(w.PodGroups, obj)
		case "Queue":
			obj := &schedulingv1beta1.Queue{}
			err = json.Unmarshal(raw, obj)
			w.Queues = append(w.Queues, obj)
		case "HyperNode":
			obj := &topologyv1alpha1.HyperNode{}
			err = json.Unmarshal(raw, obj)
			w.HyperNodes = append(w.HyperNodes, obj)
		case "PriorityClass":
			obj := &schedulingv1.PriorityClass{}
			err = json.Unmarshal(raw, obj)
			w.PriorityClasses = append(w.PriorityClasses, obj)
		default:
			return nil, fmt.Errorf("object %d: kind %q is not read by the scheduler", i, head.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("object %d (%s): %v", i, head.Kind, err)
		}
	}
	return w, nil
}

// clone copies the objects a run changes (pods and PodGroups), so repeats start alike.
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
