#!/usr/bin/env bash
# Prints a file as a Markdown section whose code fence nothing in the file can close: the fence is
# one backtick longer than the longest run of backticks inside (CommonMark closes a fence only with
# at least as many). Output from programs, clusters and stack files goes into pull-request comments
# only this way. A file longer than the limit keeps its end, where errors are.
# Usage: .github/scripts/fence.sh <title> <file> [max-chars]
set -euo pipefail
title="${1:?title}" file="${2:?file}" limit="${3:-60000}"
text="$(cat "$file")"
if [ "${#text}" -gt "$limit" ]; then
  text="[... the first $(( ${#text} - limit )) characters are cut; the full output is in the job log ...]"$'\n'"${text: -$limit}"
fi
longest="$(printf '%s\n' "$text" | { grep -o '`\+' || true; } | awk '{ if (length($0) > n) n = length($0) } END { print n + 0 }')"
count=$(( longest >= 3 ? longest + 1 : 3 ))
fence="$(printf '%*s' "$count" '' | tr ' ' '`')"
printf '### %s\n\n%s\n%s\n%s\n' "$title" "$fence" "$text" "$fence"
