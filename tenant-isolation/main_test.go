package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Namespaces labelled as the API server labels them (kubernetes.io/metadata.name) plus one label
// of the project's own, so a namespaceSelector on either can be told apart.
const namespaces = `"namespaces": {
	"tenant-a": {"kubernetes.io/metadata.name": "tenant-a", "tenant": "a"},
	"tenant-b": {"kubernetes.io/metadata.name": "tenant-b", "tenant": "b"},
	"gateway": {"kubernetes.io/metadata.name": "gateway"}
}`

const defaultDenyIngress = `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
	"metadata": {"name": "default-deny", "namespace": "tenant-a"},
	"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}`

const allowFromGateway = `{"metadata": {"name": "from-gateway", "namespace": "tenant-a"},
	"spec": {"podSelector": {"matchLabels": {"app": "vllm"}}, "policyTypes": ["Ingress"],
		"ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}]}]}}`

const allowNamedPort = `{"metadata": {"name": "http-only", "namespace": "tenant-a"},
	"spec": {"podSelector": {"matchLabels": {"app": "vllm"}}, "policyTypes": ["Ingress"],
		"ingress": [{"from": [{"namespaceSelector": {}}], "ports": [{"port": "http"}]}]}}`

// No policyTypes: the API server defaults it to Ingress and Egress (the policy has egress rules).
const egressNoMetadata = `{"metadata": {"name": "no-metadata", "namespace": "tenant-a"},
	"spec": {"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}]}]}}`

const hostPathPod = `{"metadata": {"name": "hostpath", "namespace": "tenant-a"},
	"spec": {"containers": [{"name": "c", "image": "busybox"}],
		"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}`

const restrictedPod = `{"metadata": {"name": "ok", "namespace": "tenant-a"},
	"spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
		"containers": [{"name": "vllm", "image": "vllm",
			"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}`

// Restricted in every way but runAsNonRoot.
const rootPod = `{"metadata": {"name": "root", "namespace": "tenant-a"},
	"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
		"containers": [{"name": "vllm", "image": "vllm",
			"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}`

func doc(policies, flows, pods string) string {
	return `{` + namespaces + `, "networkPolicies": [` + policies + `], "flows": [` + flows + `], "pods": [` + pods + `]}`
}

func TestEvaluate(t *testing.T) {
	type flowWant struct{ allowed, ingress, egress bool }
	type podWant struct {
		allowed bool
		reason  string // a substring one reason must contain
	}
	cases := []struct {
		name  string
		input string
		flows map[string]flowWant
		pods  map[string]podWant
	}{
		{
			name: "default-deny ingress denies, and only in its namespace",
			input: doc(defaultDenyIngress, `
				{"name": "b-to-a", "from": {"namespace": "tenant-b", "labels": {"app": "x"}}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000},
				{"name": "a-to-b", "from": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "to": {"namespace": "tenant-b", "labels": {"app": "x"}}, "port": 8000}`, ``),
			flows: map[string]flowWant{
				"b-to-a": {allowed: false, ingress: false, egress: true},
				"a-to-b": {allowed: true, ingress: true, egress: true},
			},
		},
		{
			name: "namespaceSelector on kubernetes.io/metadata.name admits only that namespace",
			input: doc(defaultDenyIngress+`,`+allowFromGateway, `
				{"name": "gateway", "from": {"namespace": "gateway", "labels": {"app": "gw"}}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000},
				{"name": "tenant-b", "from": {"namespace": "tenant-b", "labels": {"app": "gw"}}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000},
				{"name": "same-namespace", "from": {"namespace": "tenant-a", "labels": {"app": "gw"}}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000},
				{"name": "gateway-to-unselected-pod", "from": {"namespace": "gateway", "labels": {"app": "gw"}}, "to": {"namespace": "tenant-a", "labels": {"app": "db"}}, "port": 8000}`, ``),
			flows: map[string]flowWant{
				"gateway":                   {allowed: true, ingress: true, egress: true},
				"tenant-b":                  {allowed: false, ingress: false, egress: true},
				"same-namespace":            {allowed: false, ingress: false, egress: true},
				"gateway-to-unselected-pod": {allowed: false, ingress: false, egress: true},
			},
		},
		{
			name: "a named port matches the flow's portName, not its number",
			input: doc(allowNamedPort, `
				{"name": "named", "from": {"namespace": "gateway"}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000, "portName": "http"},
				{"name": "unnamed", "from": {"namespace": "gateway"}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000},
				{"name": "other-name", "from": {"namespace": "gateway"}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000, "portName": "metrics"},
				{"name": "udp", "from": {"namespace": "gateway"}, "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "port": 8000, "portName": "http", "protocol": "UDP"}`, ``),
			flows: map[string]flowWant{
				"named":      {allowed: true, ingress: true, egress: true},
				"unnamed":    {allowed: false, ingress: false, egress: true},
				"other-name": {allowed: false, ingress: false, egress: true},
				"udp":        {allowed: false, ingress: false, egress: true},
			},
		},
		{
			name: "egress ipBlock with except denies the excepted address only",
			input: doc(egressNoMetadata, `
				{"name": "metadata", "from": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "to": {"ip": "169.254.169.254"}, "port": 80},
				{"name": "internet", "from": {"namespace": "tenant-a", "labels": {"app": "vllm"}}, "to": {"ip": "1.1.1.1"}, "port": 443},
				{"name": "pod-with-ip", "from": {"namespace": "tenant-a"}, "to": {"namespace": "tenant-b", "ip": "10.0.0.7"}, "port": 443},
				{"name": "into-tenant-a", "from": {"ip": "1.1.1.1"}, "to": {"namespace": "tenant-a", "ip": "10.0.0.8"}, "port": 443}`, ``),
			flows: map[string]flowWant{
				"metadata": {allowed: false, ingress: true, egress: false},
				"internet": {allowed: true, ingress: true, egress: true},
				// cyclonus matches an ipBlock against a pod's IP too.
				"pod-with-ip": {allowed: true, ingress: true, egress: true},
				// policyTypes defaulted to [Ingress, Egress]: no ingress rules, so ingress is denied.
				"into-tenant-a": {allowed: false, ingress: false, egress: true},
			},
		},
		{
			name: "hostPath fails baseline with its reason and passes privileged",
			input: doc(``, ``, `{"name": "baseline", "level": "baseline", "metadata": `+jsonField(hostPathPod, "metadata")+`, "spec": `+jsonField(hostPathPod, "spec")+`},
				{"name": "privileged", "level": "privileged", "metadata": `+jsonField(hostPathPod, "metadata")+`, "spec": `+jsonField(hostPathPod, "spec")+`}`),
			pods: map[string]podWant{
				"baseline":   {allowed: false, reason: `hostPath volumes: volume "root"`},
				"privileged": {allowed: true},
			},
		},
		{
			name: "restricted wants runAsNonRoot",
			input: doc(``, ``, `{"name": "root", "level": "restricted", "metadata": `+jsonField(rootPod, "metadata")+`, "spec": `+jsonField(rootPod, "spec")+`},
				{"name": "root-baseline", "level": "baseline", "metadata": `+jsonField(rootPod, "metadata")+`, "spec": `+jsonField(rootPod, "spec")+`},
				{"name": "ok", "level": "restricted", "version": "v1.30", "metadata": `+jsonField(restrictedPod, "metadata")+`, "spec": `+jsonField(restrictedPod, "spec")+`}`),
			pods: map[string]podWant{
				"root":          {allowed: false, reason: "runAsNonRoot != true"},
				"root-baseline": {allowed: true},
				"ok":            {allowed: true},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(strings.NewReader(tc.input), &out, maxInput); err != nil {
				t.Fatalf("run: %v", err)
			}
			var resp response
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			if len(resp.Flows) != len(tc.flows) || len(resp.Pods) != len(tc.pods) {
				t.Fatalf("got %d flows and %d pods, want %d and %d: %s", len(resp.Flows), len(resp.Pods), len(tc.flows), len(tc.pods), out.String())
			}
			for _, f := range resp.Flows {
				want, ok := tc.flows[f.Name]
				got := flowWant{f.Allowed, f.Ingress, f.Egress}
				if !ok || got != want {
					t.Errorf("flow %q: got %+v, want %+v", f.Name, got, want)
				}
			}
			for _, p := range resp.Pods {
				want, ok := tc.pods[p.Name]
				if !ok || p.Allowed != want.allowed {
					t.Errorf("pod %q: allowed %v, want %v (reasons %q)", p.Name, p.Allowed, want.allowed, p.Reasons)
					continue
				}
				if want.allowed != (len(p.Reasons) == 0) {
					t.Errorf("pod %q: allowed %v with reasons %q", p.Name, p.Allowed, p.Reasons)
				}
				if want.reason != "" && !containsReason(p.Reasons, want.reason) {
					t.Errorf("pod %q: no reason contains %q: %q", p.Name, want.reason, p.Reasons)
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name, input, want string
	}{
		{"unknown namespace",
			doc(``, `{"name": "x", "from": {"namespace": "nowhere"}, "to": {"ip": "1.1.1.1"}, "port": 80}`, ``),
			`flows[0].from.namespace: namespace "nowhere" is not in namespaces`},
		{"misspelt policy field",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelecter": {}}}`, ``, ``),
			`networkPolicies[0]: json: unknown field "podSelecter"`},
		{"peer with ipBlock and selector (cyclonus would drop the selector)",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]}}`, ``, ``),
			`networkPolicies[0] (tenant-a/p).spec.ingress[0].from[0]: has an ipBlock and a selector`},
		{"empty peer (cyclonus would read it as every pod of the namespace)",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {}, "egress": [{"to": [{}]}]}}`, ``, ``),
			`networkPolicies[0] (tenant-a/p).spec.egress[0].to[0]: names no ipBlock`},
		{"port range without a start (cyclonus panics on it)",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {}, "ingress": [{"ports": [{"endPort": 9000}]}]}}`, ``, ``),
			`networkPolicies[0] (tenant-a/p): cyclonus: invalid port range: start port is nil`},
		{"bad CIDR (cyclonus panics on it when a flow reaches it)",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}}`, ``, ``),
			`networkPolicies[0] (tenant-a/p).spec.ingress[0].from[0].ipBlock.cidr: invalid CIDR address`},
		{"bad selector operator",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}}}`, ``, ``),
			`networkPolicies[0] (tenant-a/p).spec.podSelector: "Is" is not a valid label selector operator`},
		{"NotIn, which cyclonus reads unlike Kubernetes",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [{"key": "tenant", "operator": "NotIn", "values": ["b"]}]}}]}]}}`, ``, ``),
			`networkPolicies[0] (tenant-a/p).spec.ingress[0].from[0].namespaceSelector.matchExpressions[0]: NotIn is refused`},
		{"pod without ip against an ipBlock rule",
			doc(`{"metadata": {"name": "p", "namespace": "tenant-a"}, "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}}`,
				`{"name": "x", "from": {"namespace": "tenant-b"}, "to": {"namespace": "tenant-a"}, "port": 80}`, ``),
			`flows[0].from: has no "ip"`},
		{"bad level",
			doc(``, ``, `{"name": "p", "level": "strict", "metadata": {}, "spec": {}}`),
			`pods[0].level: "strict": must be one of`},
		{"trailing data", `{} {}`, `stdin: more than one JSON value`},
		{"empty", " \n", `stdin: empty`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(strings.NewReader(tc.input), &bytes.Buffer{}, maxInput)
			var ie *inputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an input error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("size limit", func(t *testing.T) {
		err := run(strings.NewReader(doc(``, ``, ``)), &bytes.Buffer{}, 16)
		var ie *inputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "more than 16 bytes") {
			t.Fatalf("got %v, want the size limit refused", err)
		}
	})
}

// jsonField returns one top-level field of a JSON object, as JSON.
func jsonField(object, field string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(object), &m); err != nil {
		panic(err)
	}
	return string(m[field])
}

func containsReason(reasons []string, want string) bool {
	for _, r := range reasons {
		if strings.Contains(r, want) {
			return true
		}
	}
	return false
}
