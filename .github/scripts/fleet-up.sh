#!/usr/bin/env bash
# One stack of a fleet wave in the deploy workflow: `volcano-platform fleet up --stack <stack>` (the
# gates before `up`, `pulumi up --refresh` with the policy pack, the gate after it), its report as a
# fenced Markdown section in the job summary (gate messages quote the cluster, which the job does
# not trust). Exits with the command's status: 1 when a gate or `up` failed, which stops the waves
# after this one. The step gives it the kubeconfig (through with-kubeconfig.sh) and the passphrase.
# Usage: .github/scripts/fleet-up.sh <fleet file> <stack>
set -uo pipefail
fleet="${1:?fleet file}" stack="${2:?stack}"
cd "$(dirname "$0")/../.." || exit 2
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
status=0
.venv/bin/volcano-platform fleet up --fleet "$fleet" --stack "$stack" --policy-pack policy > "$report" || status=$?
cat "$report"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  .github/scripts/fence.sh "fleet up of \`$stack\` (exit $status)" "$report" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
