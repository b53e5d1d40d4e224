package main

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// pod is one pod to judge at one Pod Security Standards level. Version is the policy version, as
// the namespace label pod-security.kubernetes.io/enforce-version gives it ("v1.30", or "latest",
// the default).
type pod struct {
	Name     string            `json:"name"`
	Level    string            `json:"level"`
	Version  string            `json:"version,omitempty"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     corev1.PodSpec    `json:"spec"`
}

type podAnswer struct {
	Name    string   `json:"name"`
	Allowed bool     `json:"allowed"`
	Reasons []string `json:"reasons"`
}

func evaluatePods(raw []json.RawMessage) ([]podAnswer, error) {
	answers := make([]podAnswer, 0, len(raw))
	if len(raw) == 0 {
		return answers, nil
	}
	// As the PSA webhook builds it (cmd/webhook/server/server.go): the default checks, no
	// emulated older version.
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("pod-security-admission: %w", err)
	}
	for i, item := range raw {
		path := fmt.Sprintf("pods[%d]", i)
		var p pod
		if err := decodeStrict(item, &p); err != nil {
			return nil, badInput(path, "%v", err)
		}
		level, err := api.ParseLevel(p.Level)
		if err != nil {
			return nil, badInput(path+".level", "%q: %v", p.Level, err)
		}
		version := api.LatestVersion()
		if p.Version != "" {
			if version, err = api.ParseVersion(p.Version); err != nil {
				return nil, badInput(path+".version", "%q: %v", p.Version, err)
			}
		}
		results := evaluator.EvaluatePod(api.LevelVersion{Level: level, Version: version}, &p.Metadata, &p.Spec)
		// The admission plugin's own aggregation, which also names a check that forbade
		// without a reason.
		agg := policy.AggregateCheckResults(results)
		reasons := make([]string, 0, len(agg.ForbiddenReasons))
		for j, reason := range agg.ForbiddenReasons {
			if detail := agg.ForbiddenDetails[j]; detail != "" {
				reason += ": " + detail
			}
			reasons = append(reasons, reason)
		}
		answers = append(answers, podAnswer{Name: p.Name, Allowed: agg.Allowed, Reasons: reasons})
	}
	return answers, nil
}
