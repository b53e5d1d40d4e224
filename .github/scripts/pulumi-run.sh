#!/usr/bin/env bash
# `pulumi preview` or `pulumi up` of one stack, always with a refresh (a preview of stale state
# shows the wrong change) and the policy pack, and the output as a fenced Markdown section in <out>
# and the job summary. Exits with pulumi's status. The step gives it the credentials it needs (the
# kubeconfig through with-kubeconfig.sh, PULUMI_CONFIG_PASSPHRASE), and no other step has them.
#
# A preview is reported as the reviewer reads it (`python -m cli.preview_report`: what changes
# first, each changed field old -> new, then errors and warnings), from the preview's JSON rather
# than its `--diff` text, which lists every refreshed object (megabytes at a thousand nodes). A
# preview that fails on a field another field manager holds on the cluster (drift that is not the
# pull request's; a preview never takes fields over, not even kubectl's) is taken again with the
# provider's force, PULUMI_K8S_ENABLE_PATCH_FORCE, and the report says so first, naming the
# managers and the fix; `up` never forces unless the stack says so (`cluster.forceFieldOwnership`).
# Usage: .github/scripts/pulumi-run.sh <preview|up> <stack> <out>
set -uo pipefail
command="${1:?preview or up}" stack="${2:?stack}" out="${3:?output file}"
cd "$(dirname "$0")/../.." || exit 2
case "$command" in
  preview | up) ;;
  *) echo "usage: pulumi-run.sh <preview|up> <stack> <out>" >&2; exit 2 ;;
esac
org="${PULUMI_CLOUD_ORGANIZATION:-organization}"
[ -n "${PULUMI_BACKEND_URL:-}" ] && org="organization"
common=(--stack "$org/volcano-platform/$stack" --refresh --policy-pack policy --non-interactive --color never)
log="$(mktemp)"
err="$(mktemp)"
first="$(mktemp)"
report="$(mktemp)"
trap 'rm -f "$log" "$err" "$first" "$report"' EXIT
status=0
if [ "$command" = up ]; then
  pulumi up "${common[@]}" --yes --diff > "$log" 2>&1 || status=$?
  cat "$log"
  .github/scripts/fence.sh "pulumi up of \`$stack\` (exit $status)" "$log" > "$out"
else
  forced=()
  pulumi preview "${common[@]}" --json > "$log" 2> "$err" || status=$?
  if [ "$status" -ne 0 ] && .venv/bin/python -m cli.preview_report "$log" --conflict; then
    echo "the preview failed on fields another field manager holds; taking it again with the provider's force" >&2
    status=0
    cp "$log" "$first"
    forced=(--conflicts-from "$first")
    PULUMI_K8S_ENABLE_PATCH_FORCE=true pulumi preview "${common[@]}" --json > "$log" 2> "$err" || status=$?
  fi
  cat "$err" >&2
  cat "$log"
  .venv/bin/python -m cli.preview_report "$log" "${forced[@]}" > "$report"
  if [ "$status" -ne 0 ]; then
    printf '\nThe CLI said (its last lines):\n' >> "$report"
    tail -c 20000 "$err" >> "$report"
  fi
  .github/scripts/fence.sh "pulumi preview of \`$stack\` (exit $status)" "$report" > "$out"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$out" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
