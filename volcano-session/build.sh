#!/usr/bin/env bash
# Builds volcano-session into the file named by $1 (default ./volcano-session).
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
bash "$here/../volcano-apis/prepare.sh" "$work/apis"
(cd "$work" && go build -trimpath -ldflags=-s -o "$out" .)
