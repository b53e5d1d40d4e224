#!/usr/bin/env bash
# Builds volcano-session into the file named by $1 (default ./volcano-session).
#
# Volcano v1.15.1 compiles against its staging copy of volcano.sh/apis, which the module proxy
# does not serve at v1.15.x. Its Go types are those of volcano.sh/apis v1.14.0 (the v1.14.0 ->
# v1.15.0 diff of pkg/apis changes comments and validation markers and adds one constant), so
# ./apis is v1.14.0 from the module proxy, checked against the hash below, plus that constant.
# The build runs in a scratch copy of this folder, so the checkout is never written to.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/volcano-session}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
apis_version=v1.14.0
apis_sum='h1:Rf8wzGFmgzbyg85GO0CxapDDEk/VM3D7QbjbI/sH+OQ='

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
info=$(cd "$scratch" && GOFLAGS=-mod=mod go mod download -json "volcano.sh/apis@$apis_version")
dir=$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
sum=$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p')
if [ "$sum" != "$apis_sum" ]; then
  echo "volcano.sh/apis@$apis_version has hash $sum, expected $apis_sum" >&2
  exit 1
fi
work=$scratch/volcano-session
mkdir -p "$work"
cp "$here"/go.mod "$here"/go.sum "$here"/*.go "$work"/
cp -R "$dir" "$work/apis"
chmod -R u+w "$work/apis"
cp "$here/gate/queue_allocation_gate.go.in" "$work/apis/pkg/apis/scheduling/v1beta1/zz_queue_allocation_gate.go"
(cd "$work" && go build -trimpath -ldflags=-s -o "$out" .)
