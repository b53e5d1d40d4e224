#!/usr/bin/env bash
# Log in to the state backend and select the stack, failing the job with a clear message if either
# fails (pulumi/actions only warns when its own login fails, and the run then fails later, far from
# the cause). Backend: $PULUMI_BACKEND_URL (self-managed), else Pulumi Cloud (token from OIDC).
# Usage: .github/scripts/pulumi-login.sh <stack>
set -euo pipefail
stack="${1:?stack name}"
if [ -n "${PULUMI_BACKEND_URL:-}" ]; then
  org="organization"
  if ! pulumi login "$PULUMI_BACKEND_URL"; then
    echo "::error::cannot log in to the state backend $PULUMI_BACKEND_URL: check the cloud credentials (OIDC role)" >&2
    exit 1
  fi
else
  org="${PULUMI_CLOUD_ORGANIZATION:?set PULUMI_BACKEND_URL or PULUMI_CLOUD_ORGANIZATION}"
  if ! pulumi login; then
    echo "::error::cannot log in to Pulumi Cloud: check the OIDC trust of organization $org" >&2
    exit 1
  fi
fi
if ! pulumi stack select "$org/volcano-platform/$stack"; then
  echo "::error::stack $org/volcano-platform/$stack does not exist in the backend (pulumi stack init it once)" >&2
  exit 1
fi
