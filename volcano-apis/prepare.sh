#!/usr/bin/env bash
# Writes volcano.sh/apis, as Volcano v1.15.1 builds against it, into the folder named by $1.
#
# Volcano v1.15.1 compiles against its staging copy of volcano.sh/apis, which the module proxy
# does not serve at v1.15.x. Its Go types are those of volcano.sh/apis v1.14.0 (the v1.14.0 ->
# v1.15.0 diff of pkg/apis changes comments and validation markers and adds one constant), so the
# folder is v1.14.0 from the module proxy, checked against the hash below, plus that constant.
# Every Go module here that builds Volcano's code replaces volcano.sh/apis with this folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=$1
apis_version=v1.14.0
apis_sum='h1:Rf8wzGFmgzbyg85GO0CxapDDEk/VM3D7QbjbI/sH+OQ='

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
info=$(cd "$probe" && GOFLAGS=-mod=mod go mod download -json "volcano.sh/apis@$apis_version")
dir=$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
sum=$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p')
if [ "$sum" != "$apis_sum" ]; then
  echo "volcano.sh/apis@$apis_version has hash $sum, expected $apis_sum" >&2
  exit 1
fi
cp -R "$dir" "$dest"
chmod -R u+w "$dest"
cp "$here/queue_allocation_gate.go.in" "$dest/pkg/apis/scheduling/v1beta1/zz_queue_allocation_gate.go"
