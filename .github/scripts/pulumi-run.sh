#!/usr/bin/env bash
# `pulumi preview` or `pulumi up` of one stack, always with a refresh (a preview of stale state
# shows the wrong change) and the policy pack, and the output as a fenced Markdown section in <out>
# and the job summary. Exits with pulumi's status. The step gives it the credentials it needs (the
# kubeconfig through with-kubeconfig.sh, PULUMI_CONFIG_PASSPHRASE), and no other step has them.
# Usage: .github/scripts/pulumi-run.sh <preview|up> <stack> <out>
set -uo pipefail
command="${1:?preview or up}" stack="${2:?stack}" out="${3:?output file}"
cd "$(dirname "$0")/../.." || exit 2
case "$command" in
  preview) extra=(--diff) ;;
  up) extra=(--yes --diff) ;;
  *) echo "usage: pulumi-run.sh <preview|up> <stack> <out>" >&2; exit 2 ;;
esac
org="${PULUMI_CLOUD_ORGANIZATION:-organization}"
[ -n "${PULUMI_BACKEND_URL:-}" ] && org="organization"
log="$(mktemp)"
status=0
pulumi "$command" --stack "$org/volcano-platform/$stack" --refresh --policy-pack policy --non-interactive \
  --color never "${extra[@]}" > "$log" 2>&1 || status=$?
cat "$log"
.github/scripts/fence.sh "pulumi $command of \`$stack\` (exit $status)" "$log" > "$out"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$out" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
