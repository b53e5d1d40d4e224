#!/usr/bin/env bash
# Offline diff of every stack against a base revision, as one Markdown comment on stdout.
# Runs the Makefile's own `diff` target per stack, so CI and developers see the same thing.
# Usage: .github/scripts/offline-diff.sh <base-rev> [max-chars]
set -euo pipefail
base="${1:?base revision}"
limit="${2:-60000}"   # GitHub comments hold 65536 characters; leave room for the summary
cd "$(dirname "$0")/../.."

summary=""
details=""
failed=0
for file in Pulumi.*.yaml; do
  stack="${file#Pulumi.}"; stack="${stack%.yaml}"
  # `make diff` exits non-zero when the stack changes, so success is read from its summary line.
  output="$(make -s --no-print-directory diff STACK="$stack" BASE="$base" 2>&1 | grep -v '^make: \*\*\*' || true)"
  status="$(printf '%s\n' "$output" | grep -Em1 '^(no changes|[0-9]+ added, [0-9]+ changed, [0-9]+ replaced, [0-9]+ removed(, [0-9]+ imported)?)$' || true)"
  if [ -z "$status" ]; then
    status="**diff failed**"
    failed=1
  elif printf '%s\n' "$output" | grep -q '^PROVIDER REPLACED'; then
    status="**provider replaced: every resource is replaced**; $status"
  fi
  summary+="| \`$stack\` | $status |"$'\n'
  details+="<details><summary><code>$stack</code>: $status</summary>"$'\n\n```diff\n'"$output"$'\n```\n</details>\n\n'
done

comment="## Offline diff against \`$base\`"$'\n\n'"| stack | objects |"$'\n'"|---|---|"$'\n'"$summary"$'\n'"$details"
if [ "${#comment}" -gt "$limit" ]; then
  comment="${comment:0:$limit}"$'\n```\n\n_Cut to the comment limit: run `make diff STACK=<stack>` locally for the rest._\n'
fi
printf '%s\n' "$comment"
exit "$failed"
