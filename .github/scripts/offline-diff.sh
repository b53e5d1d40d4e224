#!/usr/bin/env bash
# Offline diff of every stack against a base revision, as one Markdown comment on stdout: per stack,
# what the change does to the platform (models, quotas, placement, new warnings) first, then every
# changed object's manifest diff, collapsed. Runs the Makefile's own `diff` target per stack, so CI
# and developers see the same thing, and keeps both renders of each stack under out/diff/<stack>/
# (base/ and head/, with their topology.svg) for the workflow to attach. With a snapshot folder
# holding <stack>.json (the cluster the default branch's last preview recorded), each stack's diff
# also says what the scheduler will do with the change on that cluster.
# Usage: .github/scripts/offline-diff.sh <base-rev> [max-chars] [pictures-url] [snapshot-dir]
set -euo pipefail
base="${1:?base revision}"
limit="${2:-60000}"   # GitHub comments hold 65536 characters; leave room for the summary
pictures="${3:-}"
snapshots="${4:-}"
cd "$(dirname "$0")/../.." || exit 2

failure="$(mktemp)"
trap 'rm -f "$failure"' EXIT
table=""
answered=""
platform=""
objects=""
failed=0
for file in Pulumi.*.yaml; do
  stack="${file#Pulumi.}"; stack="${stack%.yaml}"
  rm -rf "out/diff/$stack"
  snapshot=""
  if [ -n "$snapshots" ] && [ -f "$snapshots/$stack.json" ]; then
    snapshot="$snapshots/$stack.json"
  fi
  # `make diff` exits non-zero when the stack changes, so success is read from its summary line.
  output="$(make -s --no-print-directory diff STACK="$stack" BASE="$base" MARKDOWN=1 KEEP="out/diff/$stack" \
    FROM="$snapshot" 2>&1 | grep -v '^make: \*\*\*' || true)"
  status="$(printf '%s\n' "$output" \
    | grep -Em1 '^(\*\*Objects:\*\* )?(no changes|[0-9]+ added, [0-9]+ changed, [0-9]+ replaced, [0-9]+ removed(, [0-9]+ imported)?)' \
    | sed 's/^\*\*Objects:\*\* //; s/ — .*//' || true)"
  if [ -z "$status" ]; then
    status="**diff failed**"
    failed=1
    printf '%s\n' "$output" > "$failure"
    platform+="$(.github/scripts/fence.sh "\`$stack\`: the diff failed" "$failure" 20000)"$'\n\n'
  elif [ "$status" != "no changes" ]; then
    if printf '%s\n' "$output" | grep -q '^PROVIDER REPLACED'; then
      status="**provider replaced: every resource is replaced**; $status"
    fi
    if [ -n "$snapshot" ]; then
      answered+="\`$stack\` "
    fi
    # Everything before the first collapsed object is the platform part; the objects follow.
    platform+="$(printf '%s\n' "$output" | sed '/^<details>/,$d')"$'\n\n'
    objects+="$(printf '%s\n' "$output" | sed -n '/^<details>/,$p')"$'\n\n'
  fi
  table+="| \`$stack\` | $status |"$'\n'
done

comment="## Offline diff against \`$base\`"$'\n\n'"| stack | objects |"$'\n'"|---|---|"$'\n'"$table"$'\n'
if [ -n "$pictures" ]; then
  comment+="Topology pictures of every stack, before and after: [workflow artifacts]($pictures)"$'\n\n'
fi
comment+="$platform"
if [ -n "$answered" ]; then
  comment+="_What the scheduler will do is answered above for ${answered% } on the cluster snapshot the default branch's last preview recorded; the live preview comment answers it on the cluster as it is now._"$'\n\n'
else
  comment+="_What the scheduler will do with this change on the live cluster (who is preempted or reclaimed, which models wait or never run) is answered by \`volcano-platform whatif\` at the top of each stack's live preview comment._"$'\n\n'
fi
if [ "${#comment}" -gt "$limit" ]; then
  # shellcheck disable=SC2016  # the backticks are Markdown, not a command substitution
  comment="${comment:0:$limit}"$'\n\n''_Cut to the comment limit: run `make diff STACK=<stack> MARKDOWN=1` locally for the rest._'$'\n'
  objects=""
fi
if [ $(( ${#comment} + ${#objects} )) -gt "$limit" ]; then
  # Keep the whole objects that fit: cut after the last complete one.
  room=$(( limit - ${#comment} ))
  kept=""
  if [ "$room" -gt 0 ]; then
    kept="${objects:0:$room}"
  fi
  if [[ "$kept" == *"</details>"* ]]; then
    kept="${kept%</details>*}</details>"$'\n\n'
  else
    kept=""
  fi
  # shellcheck disable=SC2016  # the backticks are Markdown, not a command substitution
  comment+="$kept"'_The object diffs were cut to the comment limit: run `make diff STACK=<stack>` locally for the rest._'$'\n'
else
  comment+="$objects"
fi
printf '%s\n' "$comment"
exit "$failed"
