#!/usr/bin/env bash
# Builds the Pulumi CLI into the folder named by $1, with its version stamped as its own Makefile
# does.
set -euo pipefail
cd "$(dirname "$0")"
version=$(go list -m -f '{{.Version}}' github.com/pulumi/pulumi/pkg/v3)
go build -trimpath -ldflags="-s -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version" \
  -o "$1/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
