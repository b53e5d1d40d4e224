#!/usr/bin/env bash
# Builds llm-d's vLLM simulator (llm-d-inference-sim v0.10.2) into the folder named by $1. Pure Go
# (no cgo): a static program, no C toolchain needed. For a real model name it tokenizes through a
# vLLM render service (--render-url); the tests run it with --force-dummy-tokenizer instead.
set -euo pipefail
cd "$(dirname "$0")"
export CGO_ENABLED=0
go build -trimpath -ldflags=-s -o "$1/llm-d-inference-sim" github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim
