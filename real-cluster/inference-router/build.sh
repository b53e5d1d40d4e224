#!/usr/bin/env bash
# Builds llm-d's endpoint picker (llm-d-inference-scheduler v0.7.1, cmd/epp), its routing sidecar
# (cmd/pd-sidecar, beside each decode vLLM of a model with prefill and decode apart) and the project's
# ext-proc client (main.go, the gateway's part in the end-to-end tests) into the folder named by
# $1; one module, so the Envoy and gRPC libraries both use are compiled once. Pure Go (no cgo):
# static programs, no C toolchain needed.
set -euo pipefail
cd "$(dirname "$0")"
export CGO_ENABLED=0
go build -trimpath -ldflags=-s -o "$1/epp" github.com/llm-d/llm-d-inference-scheduler/cmd/epp
go build -trimpath -ldflags=-s -o "$1/pd-sidecar" github.com/llm-d/llm-d-inference-scheduler/cmd/pd-sidecar
go build -trimpath -ldflags=-s -o "$1/extproc-client" .
