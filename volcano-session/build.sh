#!/usr/bin/env bash
# Builds volcano-session into the file named by $1 (default ./volcano-session), against the Volcano
# release named by $2 (default the one go.mod pins; another is releases/<release>.mod and .sum).
#
# The build runs in a scratch copy of this folder, where ./apis is volcano.sh/apis as
# ../volcano-apis/prepare.sh writes it (see README.md), so the checkout is never written to.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/volcano-session}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
work=$scratch/volcano-session
mkdir -p "$work"
cp "$here"/go.mod "$here"/go.sum "$here"/*.go "$work"/
if [ -n "${2:-}" ]; then
  cp "$here/releases/$2.mod" "$work/go.mod"
  cp "$here/releases/$2.sum" "$work/go.sum"
fi
bash "$here/../volcano-apis/prepare.sh" "$work/apis"
(cd "$work" && go build -trimpath -ldflags=-s -o "$out" .)
