#!/usr/bin/env bash
# Writes the offline diff for a pull request to <out> and to the job summary (linking the run's
# artifacts, where the workflow attaches each stack's topology pictures), whatever happened
# before: when the tests failed (or never ran) the file says so instead of holding a diff, so the
# comment step always has something to post. Exits non-zero when a stack's diff failed.
# With a snapshot folder (same-repository pull requests: see pull-request.yml), each stack's diff
# also holds the what-if on the cluster recorded there.
# Usage: .github/scripts/pr-diff.sh <tests-outcome> <base-rev> <run-url> <out> [snapshot-dir]
set -uo pipefail
tests="${1:?tests outcome}" base="${2:?base revision}" run_url="${3:?run url}" out="${4:?output file}"
snapshots="${5:-}"
cd "$(dirname "$0")/../.." || exit 2
status=0
if [ "$tests" = "success" ]; then
  .github/scripts/offline-diff.sh "$base" 60000 "$run_url#artifacts" "$snapshots" > "$out" || status=$?
else
  # shellcheck disable=SC2016  # the backticks are Markdown, not a command substitution
  printf '## Offline diff against `%s`\n\nThe tests did not pass (%s), so no diff was made: see %s\n' \
    "$base" "$tests" "$run_url" > "$out"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$out" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
