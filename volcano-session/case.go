package main

import "encoding/json"

// Case is one question: what does the scheduler do with these objects under this policy.
type Case struct {
	ID string `json:"id"`
	// Conf is a volcano-scheduler.conf. With Defaults, every plugin flag left out is on, as in
	// the scheduler binary (scheduler.UnmarshalSchedulerConf); without, a flag left out is off,
	// as in Volcano's unit tests, which build their tiers by hand.
	Conf     string `json:"conf"`
	Defaults bool   `json:"defaults"`
	// Fallback answers a Conf the release cannot read as its binary does: the scheduler keeps the
	// configuration it has, at start its DefaultSchedulerConf (pkg/scheduler/scheduler.go,
	// loadSchedulerConf), and the answer says why in PolicyRefused. Without it such a case is an error.
	Fallback bool `json:"fallback"`
	// Objects are Kubernetes objects with apiVersion and kind.
	Objects []json.RawMessage `json:"objects"`
	// Arrivals are pods that reach the cluster only once the cycles have settled (a cycle binds and
	// evicts nothing, or evicts the same pods again): the pods a controller makes only after the
	// rest of their group has gone, as LeaderWorkerSet makes a group again after a pod of it was
	// lost. The cycles then go on, within the same budget.
	Arrivals []json.RawMessage `json:"arrivals,omitempty"`
	// Waves are pods and PodGroups that arrive after the Arrivals, a wave at a time, each once
	// the cycles have settled after the one before: a change's models in the order `pulumi up`
	// creates them, when each reaches the scheduler only after it has placed the one before.
	Waves [][]json.RawMessage `json:"waves,omitempty"`
	// Cycles is how many scheduling cycles may run (1: one session). Between cycles, bound pods
	// run, evicted pods are recreated Pending and PodGroups keep the phase the session gave them.
	Cycles int `json:"cycles"`
	// Repeat runs the case this many times: ties Volcano breaks at random can then be seen as
	// different outcomes.
	Repeat int `json:"repeat"`
}

// Answer is what the scheduler did: one Outcome per distinct result over the repeats.
type Answer struct {
	ID       string    `json:"id"`
	Outcomes []Outcome `json:"outcomes,omitempty"`
	// Random is true when repeats of the same case ended differently.
	Random bool   `json:"random"`
	Error  string `json:"error,omitempty"`
	// PolicyRefused is why the release could not read the case's Conf, when Fallback ran its
	// default configuration instead.
	PolicyRefused string `json:"policyRefused,omitempty"`
}

// Outcome is the result of the cycles of one run.
type Outcome struct {
	Cycles []Cycle `json:"cycles"`
	// Pods: namespace/name -> node the pod ends on ("" when it does not run or is being deleted).
	Pods map[string]string `json:"pods"`
	// Phases: namespace/name of each PodGroup -> its phase after the last cycle.
	Phases map[string]string `json:"phases"`
	// Evicted: namespace/name of every pod evicted in any cycle, in order.
	Evicted []string `json:"evicted"`
	// Runs counts the repeats that ended this way.
	Runs int `json:"runs"`
}

// Cycle is what one session did.
type Cycle struct {
	Binds     map[string]string `json:"binds"`
	Evictions []string          `json:"evictions"`
	// EvictedFrom: evicted pod -> the node it was evicted from.
	EvictedFrom map[string]string   `json:"evictedFrom"`
	Pipelined   map[string][]string `json:"pipelined"`
	Phases      map[string]string   `json:"phases"`
	// Conditions: PodGroup -> the message of its Unschedulable condition, where the session set one.
	Conditions map[string]string `json:"conditions,omitempty"`
	// annotations: PodGroup -> its annotations as the session left them, which the scheduler
	// writes back with the phase (the allocated HyperNode among them).
	annotations map[string]map[string]string
}

func (o Outcome) key() string {
	data, _ := json.Marshal(struct {
		C []Cycle
		P map[string]string
	}{o.Cycles, o.Pods})
	return string(data)
}
