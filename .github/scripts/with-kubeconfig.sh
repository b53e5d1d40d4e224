#!/usr/bin/env bash
# Runs a command with the stack's kubeconfig. The step passes the secret as KUBECONFIG_DATA; it is
# written to a file only this user can read, handed to the command as KUBECONFIG, removed from the
# environment first and deleted when the command ends, so no later step can read it.
# Usage: KUBECONFIG_DATA=... .github/scripts/with-kubeconfig.sh <command> [args...]
set -euo pipefail
: "${KUBECONFIG_DATA:?the step must pass the kubeconfig secret of the stack as KUBECONFIG_DATA}"
[ "$#" -gt 0 ] || { echo "usage: with-kubeconfig.sh <command> [args...]" >&2; exit 2; }
umask 077
file="$(mktemp "${RUNNER_TEMP:-/tmp}/kubeconfig.XXXXXX")"
trap 'rm -f "$file"' EXIT
printf '%s' "$KUBECONFIG_DATA" > "$file"
unset KUBECONFIG_DATA
status=0
KUBECONFIG="$file" "$@" || status=$?
exit "$status"
