// Command tenant-isolation answers, with the upstream engines rather than a re-implementation,
// two questions the project's tests ask of what it renders: does this set of NetworkPolicies let
// this flow through, and does this pod pass this Pod Security Standards level.
//
// NetworkPolicy answers come from cyclonus v0.5.6 (github.com/mattfenwick/cyclonus/pkg/matcher,
// the policy model behind cyclonus's conformance probes); Pod Security answers come from
// k8s.io/pod-security-admission v0.35.10 (package policy, the checks the kube-apiserver's
// PodSecurity admission plugin and the PSA webhook run).
//
// Input, one JSON document on stdin (at most 256 MiB):
//
//	{"namespaces": {"tenant-a": {"kubernetes.io/metadata.name": "tenant-a"}, ...},
//	 "networkPolicies": [<networking.k8s.io/v1 NetworkPolicy>, ...],
//	 "flows": [{"name": "gw-to-model", "from": {"namespace": "gw", "labels": {"app": "gw"}},
//	            "to": {"namespace": "tenant-a", "labels": {"app": "vllm"}},
//	            "port": 8000, "portName": "http", "protocol": "TCP"}, ...],
//	 "pods": [{"name": "model", "level": "restricted", "metadata": {...}, "spec": {...}}, ...]}
//
// A peer is a pod ({"namespace": ..., "labels": ..., optionally "ip"}) or an address outside the
// cluster ({"ip": ...}). Output, one JSON document on stdout:
//
//	{"flows": [{"name": "gw-to-model", "allowed": true, "ingress": true, "egress": true}, ...],
//	 "pods": [{"name": "model", "allowed": false, "reasons": ["runAsNonRoot != true: pod or container \"vllm\" must set securityContext.runAsNonRoot=true"]}]}
//
// Exit status 0 on an answer, 2 on bad input (one line on stderr naming the item), 1 otherwise.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxInput bounds what is read from stdin, so a runaway caller cannot make the program hold an
// unbounded document in memory; the project's inputs are a few hundred kilobytes.
const maxInput = 256 << 20

// request is the input document. The three lists stay raw until each item is decoded on its
// own, so that a decoding error can name the item it is in.
type request struct {
	Namespaces      map[string]map[string]string `json:"namespaces"`
	NetworkPolicies []json.RawMessage            `json:"networkPolicies"`
	Flows           []json.RawMessage            `json:"flows"`
	Pods            []json.RawMessage            `json:"pods"`
}

// response is the output document. Both lists are always present, in input order.
type response struct {
	Flows []flowAnswer `json:"flows"`
	Pods  []podAnswer  `json:"pods"`
}

// inputError is a fault of the input; main exits 2 on it.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(path, format string, args ...any) error {
	return &inputError{msg: path + ": " + fmt.Sprintf(format, args...)}
}

// decodeStrict decodes one JSON value and refuses fields the Go type does not have: a misspelt
// field of a NetworkPolicy (say "podSelecter") would otherwise vanish and leave an empty
// selector, which selects every pod, and the answer would look authoritative.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// readLimited reads all of r, or fails if r holds more than limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &inputError{msg: fmt.Sprintf("stdin: more than %d bytes; refusing to read it", limit)}
	}
	return data, nil
}

// evaluate answers one input document.
func evaluate(data []byte) (*response, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, badInput("stdin", "empty; want one JSON document")
	}
	var req request
	if err := decodeStrict(data, &req); err != nil {
		return nil, badInput("stdin", "%v", err)
	}
	policies, err := buildPolicies(req.NetworkPolicies)
	if err != nil {
		return nil, err
	}
	flows, err := evaluateFlows(policies, req.Namespaces, req.Flows)
	if err != nil {
		return nil, err
	}
	pods, err := evaluatePods(req.Pods)
	if err != nil {
		return nil, err
	}
	return &response{Flows: flows, Pods: pods}, nil
}

// run reads the request from in and writes the answer to out.
func run(in io.Reader, out io.Writer, limit int64) error {
	data, err := readLimited(in, limit)
	if err != nil {
		return err
	}
	resp, err := evaluate(data)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	// Reasons quote container names and values; keep them readable rather than \u003c-escaped.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return err
	}
	return w.Flush()
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "tenant-isolation: takes no arguments; reads one JSON document on stdin (see README.md)")
		os.Exit(2)
	}
	err := run(os.Stdin, os.Stdout, maxInput)
	if err == nil {
		return
	}
	// One line, whatever the engines put in their messages.
	msg := "tenant-isolation: " + strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintln(os.Stderr, msg)
	var ie *inputError
	if errors.As(err, &ie) {
		os.Exit(2)
	}
	os.Exit(1)
}
