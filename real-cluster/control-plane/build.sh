#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and Volcano's vc-scheduler,
# vc-controller-manager and vc-webhook-manager into the folder named by $1, in a scratch copy of
# this folder where ./apis is volcano.sh/apis as ../../volcano-apis/prepare.sh writes it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$here/go.mod" "$here/go.sum" "$scratch/"
bash "$here/../../volcano-apis/prepare.sh" "$scratch/apis"
cd "$scratch"
go build -trimpath -ldflags=-s -o "$out/" tool
mv "$out/scheduler" "$out/vc-scheduler"
mv "$out/controller-manager" "$out/vc-controller-manager"
mv "$out/webhook-manager" "$out/vc-webhook-manager"
