#!/usr/bin/env bash
# Builds Pulumi's Kubernetes provider into the folder named by $1, as plugin version $2 (the
# version the stack's pulumi-kubernetes SDK asks the engine for). main.go embeds the schema and
# the Terraform mapping that the provider module ships next to its own main; they are copied
# from the module, in a scratch copy of this folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
version=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$here/go.mod" "$here/go.sum" "$here/main.go" "$scratch/"
cd "$scratch"
dir=$(go mod download -json github.com/pulumi/pulumi-kubernetes/provider/v4 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp "$dir/cmd/pulumi-resource-kubernetes/schema.json" "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" .
go build -trimpath -ldflags="-s -X main.version=$version" -o "$out/pulumi-resource-kubernetes" .
