package main

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// peer is one end of a flow: a pod (namespace and labels, and its IP when ipBlock rules should
// see it) or an address outside the cluster (ip alone).
type peer struct {
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	IP        string            `json:"ip,omitempty"`
}

// flow is one connection to judge. PortName is the name of the destination container's port,
// which NetworkPolicies that name ports match against.
type flow struct {
	Name     string `json:"name"`
	From     *peer  `json:"from"`
	To       *peer  `json:"to"`
	Port     int    `json:"port"`
	PortName string `json:"portName,omitempty"`
	Protocol string `json:"protocol,omitempty"`
}

type flowAnswer struct {
	Name    string `json:"name"`
	Allowed bool   `json:"allowed"`
	Ingress bool   `json:"ingress"`
	Egress  bool   `json:"egress"`
}

// validProtocol is the set the API server accepts for a NetworkPolicyPort and a container port.
var validProtocol = map[corev1.Protocol]bool{corev1.ProtocolTCP: true, corev1.ProtocolUDP: true, corev1.ProtocolSCTP: true}

// buildPolicies decodes the NetworkPolicies and builds cyclonus's model of them all together
// (matcher.BuildNetworkPolicies, pkg/matcher/builder.go).
//
// cyclonus assumes what the API server guarantees and panics, sometimes only while evaluating a
// flow, on what it would refuse; so each policy is first given the API server's defaults and
// checked for what cyclonus would trip on, and its own builder is run on it alone under recover,
// so that a bad policy is an input error that names it.
func buildPolicies(raw []json.RawMessage) (*matcher.Policy, error) {
	policies := make([]*networkingv1.NetworkPolicy, 0, len(raw))
	for i, item := range raw {
		np := &networkingv1.NetworkPolicy{}
		path := fmt.Sprintf("networkPolicies[%d]", i)
		if err := decodeStrict(item, np); err != nil {
			return nil, badInput(path, "%v", err)
		}
		path = fmt.Sprintf("networkPolicies[%d] (%s/%s)", i, np.Namespace, np.Name)
		if err := checkPolicy(path, np); err != nil {
			return nil, err
		}
		if err := tryBuildTarget(np); err != nil {
			return nil, badInput(path, "cyclonus: %v", err)
		}
		policies = append(policies, np)
	}
	// simplify=false: evaluate the rules as written; Simplify only merges cyclonus's matchers.
	return matcher.BuildNetworkPolicies(false, policies), nil
}

func tryBuildTarget(np *networkingv1.NetworkPolicy) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	matcher.BuildTarget(np)
	return nil
}

// checkPolicy applies the API server's defaulting for policyTypes and refuses what the API
// server would refuse and cyclonus would panic on, or silently ignore.
func checkPolicy(path string, np *networkingv1.NetworkPolicy) error {
	if np.Kind != "" && np.Kind != "NetworkPolicy" {
		return badInput(path+".kind", "%q is not NetworkPolicy", np.Kind)
	}
	if np.APIVersion != "" && np.APIVersion != "networking.k8s.io/v1" {
		return badInput(path+".apiVersion", "%q is not networking.k8s.io/v1", np.APIVersion)
	}
	spec := &np.Spec
	// The API server stores a policy without policyTypes as Ingress, plus Egress when it has
	// egress rules (kubernetes pkg/apis/networking/v1/defaults.go, SetDefaults_NetworkPolicy);
	// cyclonus panics on an empty list, as it only ever sees stored policies.
	if len(spec.PolicyTypes) == 0 {
		spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(spec.Egress) != 0 {
			spec.PolicyTypes = append(spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	for j, t := range spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			// cyclonus would skip it, and the policy would isolate nothing.
			return badInput(fmt.Sprintf("%s.spec.policyTypes[%d]", path, j), "%q is neither Ingress nor Egress", t)
		}
	}
	if err := checkSelector(path+".spec.podSelector", &spec.PodSelector); err != nil {
		return err
	}
	for j, rule := range spec.Ingress {
		rulePath := fmt.Sprintf("%s.spec.ingress[%d]", path, j)
		if err := checkRule(rulePath, "from", rule.Ports, rule.From); err != nil {
			return err
		}
	}
	for j, rule := range spec.Egress {
		rulePath := fmt.Sprintf("%s.spec.egress[%d]", path, j)
		if err := checkRule(rulePath, "to", rule.Ports, rule.To); err != nil {
			return err
		}
	}
	return nil
}

func checkRule(path, peersField string, ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer) error {
	for k, p := range ports {
		if p.Protocol != nil && !validProtocol[*p.Protocol] {
			return badInput(fmt.Sprintf("%s.ports[%d].protocol", path, k), "%q is not TCP, UDP or SCTP", *p.Protocol)
		}
	}
	for k, pr := range peers {
		peerPath := fmt.Sprintf("%s.%s[%d]", path, peersField, k)
		// The API server refuses a peer that is empty or mixes ipBlock with a selector.
		// cyclonus's guards against both cannot fire (BuildIPBlockNamespacePodMatcher in
		// pkg/matcher/builder.go returns no selector matcher beside an ipBlock, and an
		// all-pods one for an empty peer), so it would drop the selector, or read {} as
		// "every pod in the policy's namespace".
		hasSelector := pr.PodSelector != nil || pr.NamespaceSelector != nil
		if pr.IPBlock == nil && !hasSelector {
			return badInput(peerPath, "names no ipBlock, podSelector or namespaceSelector")
		}
		if pr.IPBlock != nil && hasSelector {
			return badInput(peerPath, "has an ipBlock and a selector; a peer is one or the other")
		}
		// Label selectors and CIDRs are only read when a flow reaches them, where cyclonus
		// panics on an unknown operator or an unparsable CIDR (pkg/kube/labelselector.go,
		// pkg/kube/ipaddress.go); check them here, with apimachinery's own selector parser.
		if pr.PodSelector != nil {
			if err := checkSelector(peerPath+".podSelector", pr.PodSelector); err != nil {
				return err
			}
		}
		if pr.NamespaceSelector != nil {
			if err := checkSelector(peerPath+".namespaceSelector", pr.NamespaceSelector); err != nil {
				return err
			}
		}
		if pr.IPBlock != nil {
			if _, _, err := net.ParseCIDR(pr.IPBlock.CIDR); err != nil {
				return badInput(peerPath+".ipBlock.cidr", "%v", err)
			}
			for e, except := range pr.IPBlock.Except {
				if _, _, err := net.ParseCIDR(except); err != nil {
					return badInput(fmt.Sprintf("%s.ipBlock.except[%d]", peerPath, e), "%v", err)
				}
			}
		}
	}
	return nil
}

func checkSelector(path string, sel *metav1.LabelSelector) error {
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return badInput(path, "%v", err)
	}
	for i, req := range sel.MatchExpressions {
		// Kubernetes selects an object without the key under NotIn (apimachinery
		// pkg/labels/selector.go, Requirement.Matches); cyclonus v0.5.6 does not
		// (pkg/kube/labelselector.go, IsMatchExpressionMatchForLabels). Rather than answer
		// wrongly for such pods, refuse it.
		if req.Operator == metav1.LabelSelectorOpNotIn {
			return badInput(fmt.Sprintf("%s.matchExpressions[%d]", path, i),
				"NotIn is refused: cyclonus does not select an object that lacks the key %q, Kubernetes does", req.Key)
		}
	}
	return nil
}

// trafficPeer turns a flow's peer into cyclonus's TrafficPeer (pkg/matcher/traffic.go).
func trafficPeer(path string, p *peer, namespaces map[string]map[string]string) (*matcher.TrafficPeer, error) {
	if p == nil {
		return nil, badInput(path, "missing")
	}
	if p.IP != "" && net.ParseIP(p.IP) == nil {
		return nil, badInput(path+".ip", "%q is not an IP address", p.IP)
	}
	if p.Namespace == "" {
		if p.IP == "" {
			return nil, badInput(path, `needs "namespace" (a pod) or "ip" (an address outside the cluster)`)
		}
		if len(p.Labels) != 0 {
			return nil, badInput(path+".labels", `pod labels need a "namespace"`)
		}
		return &matcher.TrafficPeer{IP: p.IP}, nil
	}
	nsLabels, ok := namespaces[p.Namespace]
	if !ok {
		return nil, badInput(path+".namespace", "namespace %q is not in namespaces", p.Namespace)
	}
	return &matcher.TrafficPeer{
		Internal: &matcher.InternalPeer{
			PodLabels:       p.Labels,
			NamespaceLabels: nsLabels,
			Namespace:       p.Namespace,
		},
		IP: p.IP,
	}, nil
}

func evaluateFlows(policies *matcher.Policy, namespaces map[string]map[string]string, raw []json.RawMessage) ([]flowAnswer, error) {
	answers := make([]flowAnswer, 0, len(raw))
	for i, item := range raw {
		path := fmt.Sprintf("flows[%d]", i)
		var f flow
		if err := decodeStrict(item, &f); err != nil {
			return nil, badInput(path, "%v", err)
		}
		from, err := trafficPeer(path+".from", f.From, namespaces)
		if err != nil {
			return nil, err
		}
		to, err := trafficPeer(path+".to", f.To, namespaces)
		if err != nil {
			return nil, err
		}
		if f.Port < 1 || f.Port > 65535 {
			return nil, badInput(path+".port", "%d is not a port (1-65535)", f.Port)
		}
		protocol := corev1.ProtocolTCP
		if f.Protocol != "" {
			protocol = corev1.Protocol(f.Protocol)
			if !validProtocol[protocol] {
				return nil, badInput(path+".protocol", "%q is not TCP, UDP or SCTP", f.Protocol)
			}
		}
		traffic := &matcher.Traffic{
			Source:           from,
			Destination:      to,
			ResolvedPort:     f.Port,
			ResolvedPortName: f.PortName,
			Protocol:         protocol,
		}
		// (*Policy).IsTrafficAllowed is these two calls (pkg/matcher/policy.go); they are made
		// one at a time so that a panic can be put on the peer it concerns.
		ingress, err := direction(policies, traffic, true, path, "from")
		if err != nil {
			return nil, err
		}
		egress, err := direction(policies, traffic, false, path, "to")
		if err != nil {
			return nil, err
		}
		answers = append(answers, flowAnswer{Name: f.Name, Allowed: ingress && egress, Ingress: ingress, Egress: egress})
	}
	return answers, nil
}

// direction asks cyclonus whether the policies that select the receiving pod (ingress) or the
// sending pod (egress) let the traffic through. The other end is the peer the rules are matched
// against, named by peerField.
func direction(policies *matcher.Policy, traffic *matcher.Traffic, isIngress bool, path, peerField string) (allowed bool, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		p := traffic.Destination
		if isIngress {
			p = traffic.Source
		}
		msg := fmt.Sprint(r)
		// An ipBlock rule is matched against the peer's IP, pods included; a pod sent without
		// one leaves cyclonus an empty string to parse.
		if p.IP == "" && strings.Contains(msg, "unable to parse IP") {
			err = badInput(path+"."+peerField, `has no "ip", and a NetworkPolicy on this flow's path has an ipBlock peer, which cyclonus matches against the pod's IP`)
			return
		}
		err = badInput(path, "cyclonus: %s", msg)
	}()
	return policies.IsIngressOrEgressAllowed(traffic, isIngress).IsAllowed(), nil
}
