#!/usr/bin/env bash
# Ends the cloud logins of a job once the last step that needs them has run: the OIDC actions
# export their credentials to every later step (`GITHUB_ENV`) and leave files in the workspace,
# so the steps after this one (artifact uploads) run without them.
set -euo pipefail
# Set empty for the rest of the job: the AWS SDK, gcloud and Pulumi read an empty value as unset.
for name in AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
  GOOGLE_APPLICATION_CREDENTIALS CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE GOOGLE_GHA_CREDS_PATH \
  PULUMI_ACCESS_TOKEN; do
  echo "$name=" >> "$GITHUB_ENV"
done
# google-github-actions/auth writes its credentials file into the workspace.
rm -f -- "${GITHUB_WORKSPACE:-.}"/gha-creds-*.json
# `pulumi login` keeps the backend's token in ~/.pulumi/credentials.json, read before the variable.
if command -v pulumi > /dev/null; then
  pulumi logout --all > /dev/null 2>&1 || true
fi
# azure/login keeps its token in the Azure CLI's profile.
if command -v az > /dev/null; then
  az logout > /dev/null 2>&1 || true
  az account clear > /dev/null 2>&1 || true
fi
