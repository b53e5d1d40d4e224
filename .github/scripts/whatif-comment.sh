#!/usr/bin/env bash
# The what-if of one stack, put at the top of its live preview comment: a model that will evict,
# wait or never run is the first thing a reviewer reads, then the platform changes of the preview.
# Runs `volcano-platform whatif` (read-only, with the preview identity) and writes <dir>/whatif.md;
# <dir>/preview.md becomes the what-if followed by what was there. Extra arguments go to whatif
# (tests pass `--from <dump>`).
# Usage: .github/scripts/whatif-comment.sh <stack> <report-dir> [whatif args...]
# Exit: 0 or 1 as whatif (1: something evicts, waits or never runs, which is reported, not a
# failure, so 0 then); 2 bad input; 3 a crash of the tool.
set -euo pipefail
stack="${1:?stack}"
dir="${2:?report directory}"
shift 2
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$dir"
status=0
.venv/bin/volcano-platform whatif --stack "$stack" "$@" > "$dir/whatif.md" || status=$?
if [ "$status" -ge 2 ]; then
  exit "$status"
fi
combined="$(mktemp)"
trap 'rm -f "$combined"' EXIT
cat "$dir/whatif.md" > "$combined"
if [ -f "$dir/preview.md" ]; then
  printf '\n' >> "$combined"
  cat "$dir/preview.md" >> "$combined"
fi
mv "$combined" "$dir/preview.md"
trap - EXIT
