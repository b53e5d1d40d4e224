#!/usr/bin/env bash
# Generates the CRDs that upstream projects write with their own generators, from their own Go API
# types at the versions go.mod pins, into upstream/<project>-<version>/ (or the folder named by $1),
# each folder with its SOURCE and the upstream LICENSE:
#
#   gateway-api-inference-extension-<v>/crd/  InferencePool (v1), InferenceObjective (v1alpha2): the
#       module's own pkg/generator (what its `make generate` runs last, in hack/update-codegen.sh),
#       built from the module with the controller-tools its go.mod pins
#   prometheus-engine-<v>/crd/  PodMonitoring, ClusterRules of Google Cloud Managed Service for
#       Prometheus: `controller-gen crd` on the module's API types (its hack/presubmit.sh
#       `update_crdgen`, with the license header it adds), at the controller-tools its shipped CRDs
#       name, built in the nested module managed-prometheus/ (the API types need the module's own
#       replaces, which a dependency's go.mod does not pass on)
#   gateway-api-<v>/crd/  GatewayClass, Gateway, HTTPRoute, ReferenceGrant (standard channel): Gateway
#       API's own tools/generator (its hack/update-codegen.sh), built with its own tools/go.mod and
#       go.sum. That nested module is not served by the Go module proxy, so its source comes from a
#       git repository of Gateway API at the tag ($GATEWAY_API_REPOSITORY: a URL or a local clone or
#       mirror; GitHub by default), checked against the commit pinned below. The API types it reads
#       are the module's, from the proxy (sigs.k8s.io/gateway-api in go.mod, checked by go.sum).
#
# Each generated file is compared with the file the module ships at the same path (read only to
# compare); SOURCE says whether they are byte-identical. Needs Go and the Go module proxy.
# GENERATE=<names> (of: inference-extension gateway-api prometheus-engine) writes only those.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "${1:-$here/..}" && pwd)
repository=${GATEWAY_API_REPOSITORY:-https://github.com/kubernetes-sigs/gateway-api}

# The commits of the versions go.mod pins. GAIE's is the module's (the Go module proxy's .info of
# v1.4.0); Gateway API's is checked against the tag fetched below (a tag that moved is refused).
GAIE_COMMIT=7813285134733710668bfe09231408b43493aa12
GAIE_DATE=2026-03-03
GAIE_NOTE=("The tag was moved on GitHub after the proxy served the module: it is now commit"
  "6e787dd396f0228c31cf6fc5187a13c6b4991a0b (2026-03-19), which changes apix/config/v1alpha1 (the endpoint"
  "picker's config, no CRD) but not api/, apix/v1alpha2 or config/crd/bases (the blob ids below hold at both).")
GMP_COMMIT=058752ec791edefba5c42486eb9237562c3f0d29  # the Go module proxy's .info of v0.17.2
GMP_DATE=2026-01-06
GATEWAY_API_COMMIT=e7677b70ae75d14a4448fba94870e7deea6cf0ad
GATEWAY_API_DATE=2026-03-13

GAIE_CRDS=(inference.networking.k8s.io_inferencepools inference.networking.x-k8s.io_inferenceobjectives)
GMP_CRDS=(monitoring.googleapis.com_podmonitorings monitoring.googleapis.com_clusterrules)
GATEWAY_API_CRDS=(gateway.networking.k8s.io_gatewayclasses gateway.networking.k8s.io_gateways
  gateway.networking.k8s.io_httproutes gateway.networking.k8s.io_referencegrants)

generate=${GENERATE:-inference-extension gateway-api prometheus-engine}
wanted() { [[ " $generate " == *" $1 "* ]]; }
written=()

export GOWORK=off GOFLAGS=-mod=readonly
scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
mkdir "$scratch/module"
cp "$here/go.mod" "$here/go.sum" "$here/apis.go" "$scratch/module/"
cd "$scratch/module"

module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
module_version() { go list -m -f '{{.Version}}' "$1"; }
tool_version() { go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools; }

# compare <generated> <shipped>: "byte-identical" or how many lines differ, for SOURCE
compare() {
  if cmp -s "$1" "$2"; then echo "byte-identical"; else echo "DIFFERS ($(diff "$2" "$1" | grep -c '^[<>]') changed lines)"; fi
}

# without_attribution <file>: the CRD without what controller-gen and GAIE's generator write
# differently around the same schema (a leading `---`, the version annotation, the empty status)
without_attribution() {
  sed -e '/^---$/d' -e '/controller-gen.kubebuilder.io\/version:/d' -e '/inference.networking.k8s.io\/bundle-version:/d' \
    -e '/^status:$/,$d' "$1"
}

# finish <folder>: its files read-only for everyone but the owner, and the folder in the summary
finish() {
  chmod 644 "$1"/LICENSE "$1"/crd/*.yaml
  written+=("$1")
}

# write_source <folder> <header lines...>: SOURCE with the blob id of every file of the folder
write_source() {
  local folder=$1
  shift
  {
    printf '%s\n' "$@"
    echo
    for f in "${listed[@]}"; do
      printf '%s  <- %s  (blob %s)\n' "${f%%|*}" "${f#*|}" "$(git hash-object "$folder/${f%%|*}")"
    done
  } >"$folder/SOURCE"
}

# --- Gateway API Inference Extension ------------------------------------------------------------
if wanted inference-extension; then
  gaie_version=$(module_version sigs.k8s.io/gateway-api-inference-extension)
  gaie_dir=$(module_dir sigs.k8s.io/gateway-api-inference-extension)
  gaie_out="$out/gateway-api-inference-extension-${gaie_version#v}"
  mkdir -p config/crd/bases controller-gen
  echo "generating GAIE $gaie_version CRDs (pkg/generator, controller-tools $(tool_version))" >&2
  go tool generator 2>&1 | sed 's/^/  /' >&2
  # The Makefile's first step, for the comparison only (its output is overwritten by pkg/generator).
  go tool controller-gen crd output:dir=./controller-gen \
    paths=sigs.k8s.io/gateway-api-inference-extension/api/... \
    paths=sigs.k8s.io/gateway-api-inference-extension/apix/...
  rm -rf "$gaie_out" && mkdir -p "$gaie_out/crd"
  listed=()
  results=()
  for name in "${GAIE_CRDS[@]}"; do
    cp "config/crd/bases/$name.yaml" "$gaie_out/crd/"
    listed+=("crd/$name.yaml|config/crd/bases/$name.yaml")
    alone=$(compare "controller-gen/$name.yaml" "$gaie_dir/config/crd/bases/$name.yaml")
    if [ "$alone" != byte-identical ] && cmp -s <(without_attribution "controller-gen/$name.yaml") \
      <(without_attribution "$gaie_dir/config/crd/bases/$name.yaml"); then
      alone="$alone, only the attribution: the same schema"
    fi
    results+=("  $name.yaml: $(compare "config/crd/bases/$name.yaml" "$gaie_dir/config/crd/bases/$name.yaml")" \
      "    (\`controller-gen crd\` alone: $alone)")
  done
  cp "$gaie_dir/LICENSE" "$gaie_out/"
  listed+=("LICENSE|LICENSE")
  write_source "$gaie_out" \
    "Generated from the Go module sigs.k8s.io/gateway-api-inference-extension $gaie_version, of" \
    "https://github.com/kubernetes-sigs/gateway-api-inference-extension, tag $gaie_version (commit $GAIE_COMMIT, $GAIE_DATE)." \
    "Written by upstream/generate/build.sh (\`make upstream-generated\`); check a file with \`git hash-object <file>\` against its blob id." \
    "" \
    "Generator: the module's own pkg/generator (\`go run ./pkg/generator\` in hack/update-codegen.sh, the last step" \
    "of its \`make generate\`, which rewrites what \`controller-gen crd\` wrote before it), built from the module" \
    "with sigs.k8s.io/controller-tools $(tool_version) (its go.mod's pin), reading api/v1, apix/v1alpha1 and apix/v1alpha2." \
    "Compared with the files the module ships (the path after \`<-\`):" \
    "${results[@]}" \
    "\`controller-gen crd\` (the Makefile's step before; run here at the go.mod's $(tool_version), though the Makefile's" \
    "CONTROLLER_TOOLS_VERSION still says v0.19.0) writes a leading \`---\`, the annotation" \
    "controller-gen.kubebuilder.io/version instead of inference.networking.k8s.io/bundle-version, and no empty \`status:\`." \
    "${GAIE_NOTE[@]}" \
    "The stack does not install the inference extension; these are the CRDs of the InferencePools and" \
    "InferenceObjectives it renders."
  finish "$gaie_out"
fi

# --- Gateway API ---------------------------------------------------------------------------------
if wanted gateway-api; then
  gw_version=$(module_version sigs.k8s.io/gateway-api)
  gw_dir=$(module_dir sigs.k8s.io/gateway-api)
  gw_out="$out/gateway-api-${gw_version#v}"
  mkdir "$scratch/gateway-api"
  cd "$scratch/gateway-api"
  git init -q
  git fetch -q --depth 1 "$repository" "refs/tags/$gw_version"
  commit=$(git rev-parse 'FETCH_HEAD^{commit}')
  if [ "$commit" != "$GATEWAY_API_COMMIT" ]; then
    echo "build.sh: tag $gw_version of $repository is commit $commit, not $GATEWAY_API_COMMIT" >&2
    exit 1
  fi
  git checkout -q FETCH_HEAD -- tools
  cd tools
  # tools/go.mod replaces sigs.k8s.io/gateway-api with `../`; the generator reads the module instead.
  go mod edit -replace "sigs.k8s.io/gateway-api=$gw_dir"
  gw_tools=$(go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)
  mkdir -p config/crd/standard config/crd/experimental
  echo "generating Gateway API $gw_version CRDs (tools/generator, controller-tools $gw_tools)" >&2
  go run ./generator 2>&1 | sed -e "/ experimental /d" -e "s/^/  /" >&2
  rm -rf "$gw_out" && mkdir -p "$gw_out/crd"
  listed=()
  results=()
  for name in "${GATEWAY_API_CRDS[@]}"; do
    cp "config/crd/standard/$name.yaml" "$gw_out/crd/"
    listed+=("crd/$name.yaml|config/crd/standard/$name.yaml")
    results+=("  $name.yaml: $(compare "config/crd/standard/$name.yaml" "$gw_dir/config/crd/standard/$name.yaml")")
  done
  cp "$gw_dir/LICENSE" "$gw_out/"
  listed+=("LICENSE|LICENSE")
  write_source "$gw_out" \
    "Generated from the Go module sigs.k8s.io/gateway-api $gw_version (the version llm-d-inference-scheduler v0.7.1 requires), of" \
    "https://github.com/kubernetes-sigs/gateway-api, tag $gw_version (commit $GATEWAY_API_COMMIT, $GATEWAY_API_DATE)." \
    "Written by upstream/generate/build.sh (\`make upstream-generated\`); check a file with \`git hash-object <file>\` against its blob id." \
    "" \
    "Generator: Gateway API's own tools/generator (\`go run ./tools/generator\` in hack/update-codegen.sh), the standard" \
    "channel, built with its own tools/go.mod and go.sum (sigs.k8s.io/controller-tools $gw_tools) from the tag's tools/" \
    "folder (the nested module sigs.k8s.io/gateway-api/tools is not served by the Go module proxy), reading the API" \
    "types of the module from the proxy (apis/ and apisx/; tools/go.mod's \`replace ../\` pointed at it)." \
    "Compared with the files the module ships (the path after \`<-\`):" \
    "${results[@]}" \
    "The stack does not install Gateway API; these are the CRDs of the Gateways and HTTPRoutes it renders" \
    "(GatewayClass and ReferenceGrant, which they name, beside them)."
  finish "$gw_out"
fi

# --- Google Cloud Managed Service for Prometheus ----------------------------------------------------
if wanted prometheus-engine; then
  mkdir "$scratch/managed-prometheus"
  cp "$here/managed-prometheus/go.mod" "$here/managed-prometheus/go.sum" "$here/managed-prometheus/apis.go" \
    "$scratch/managed-prometheus/"
  cd "$scratch/managed-prometheus"
  gmp_version=$(module_version github.com/GoogleCloudPlatform/prometheus-engine)
  gmp_dir=$(module_dir github.com/GoogleCloudPlatform/prometheus-engine)
  gmp_out="$out/prometheus-engine-${gmp_version#v}"
  echo "generating Managed Service for Prometheus $gmp_version CRDs (controller-gen $(tool_version))" >&2
  go tool controller-gen crd paths=github.com/GoogleCloudPlatform/prometheus-engine/pkg/operator/apis/... \
    output:crd:dir=./crd
  rm -rf "$gmp_out" && mkdir -p "$gmp_out/crd"
  listed=()
  results=()
  for name in "${GMP_CRDS[@]}"; do
    # hack/presubmit.sh: drop the first `---`, put the license header first.
    { cat "$gmp_dir/hack/boilerplate.txt"; sed '0,/---/{/---/d}' "crd/$name.yaml"; } >"$gmp_out/crd/$name.yaml"
    listed+=("crd/$name.yaml|charts/operator/crds/$name.yaml")
    results+=("  $name.yaml: $(compare "$gmp_out/crd/$name.yaml" "$gmp_dir/charts/operator/crds/$name.yaml")")
  done
  cp "$gmp_dir/LICENSE" "$gmp_out/"
  listed+=("LICENSE|LICENSE")
  write_source "$gmp_out" \
    "Generated from the Go module github.com/GoogleCloudPlatform/prometheus-engine $gmp_version (Google Cloud Managed Service" \
    "for Prometheus), of https://github.com/GoogleCloudPlatform/prometheus-engine, tag $gmp_version (commit $GMP_COMMIT, $GMP_DATE)." \
    "Written by upstream/generate/build.sh (\`make upstream-generated\`); check a file with \`git hash-object <file>\` against its blob id." \
    "" \
    "Generator: \`controller-gen crd\` on pkg/operator/apis/... (the module's hack/presubmit.sh \`update_crdgen\`, which then" \
    "drops the first \`---\` and adds hack/boilerplate.txt, done here too), sigs.k8s.io/controller-tools $(tool_version)" \
    "(the version the shipped CRDs name), built in upstream/generate/managed-prometheus/ with the module's own replaces." \
    "Compared with the files the module ships (the path after \`<-\`):" \
    "${results[@]}" \
    "The stack does not install Managed Service for Prometheus (GKE runs it); these are the CRDs of the" \
    "PodMonitorings and ClusterRules it renders with \`observability.backend: google-managed\`."
  finish "$gmp_out"
fi

echo "wrote ${written[*]}" >&2
