#!/usr/bin/env bash
# The stacks of this repository as a JSON matrix: [{"stack": "dev", "kubeconfig": "KUBECONFIG_DEV"}, ...].
# A stack's name comes from its file name, which anyone who can open a pull request chooses, and
# flows into job names, secret names and shell commands: only names that follow Pulumi's rule for
# stack names (letters, digits, `-`, `_`, `.`; at most 100) are accepted, and the JSON is written
# by a JSON encoder, never pasted together.
set -euo pipefail
cd "$(dirname "$0")/../.."
names=()
for file in Pulumi.*.yaml; do
  stack="${file#Pulumi.}"; stack="${stack%.yaml}"
  if ! [[ "$stack" =~ ^[A-Za-z0-9_.-]{1,100}$ ]] || [ "$stack" = "." ] || [ "$stack" = ".." ]; then
    echo "::error::$(printf '%q' "$file") does not name a Pulumi stack (letters, digits, -, _ and . only)" >&2
    exit 1
  fi
  names+=("$stack")
done
python3 -c '
import json, re, sys
stacks = sys.argv[1:]
matrix = [{"stack": s, "kubeconfig": "KUBECONFIG_" + re.sub("[^A-Z0-9]", "_", s.upper())} for s in stacks]
by_secret = {}
for entry in matrix:
    by_secret.setdefault(entry["kubeconfig"], []).append(entry["stack"])
for secret, names in by_secret.items():
    if len(names) > 1:
        # One secret would reach both stacks: the kubeconfig of one cluster would preview the other.
        sys.exit("::error::stacks " + " and ".join(names) + " would all use the secret " + secret + "; rename all but one")
print(json.dumps(matrix))
' "${names[@]}"
