#!/usr/bin/env bash
# The stacks of this repository as a JSON matrix: [{"stack": "dev", "kubeconfig": "KUBECONFIG_DEV"}, ...].
set -euo pipefail
cd "$(dirname "$0")/../.."
first=1
printf '['
for file in Pulumi.*.yaml; do
  stack="${file#Pulumi.}"; stack="${stack%.yaml}"
  secret="KUBECONFIG_$(printf '%s' "$stack" | tr '[:lower:]-' '[:upper:]_')"
  [ "$first" = 1 ] || printf ','
  first=0
  printf '{"stack":"%s","kubeconfig":"%s"}' "$stack" "$secret"
done
printf ']\n'
