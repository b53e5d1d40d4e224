"""The deploy workflow of a fleet (`volcano-platform fleet workflow`): one GitHub Actions job per wave,
in the fleet file's order, each wave's job starting only once every stack of the wave before it
passed its gates, its `up` and the gate after it.

GitHub Actions has no loop over jobs, so the workflow is written from the fleet file and kept in
the repository (`.github/workflows/deploy.yml`; a test keeps the two equal). Each wave is a job
with a leg per stack (`parallel` at a time), in the wave's environment: its reviewers approve the
wave and it holds the kubeconfigs of the wave's clusters (`KUBECONFIG_<STACK>`), so a wave's job
can read no other wave's clusters. Each leg runs `volcano-platform fleet up --stack <stack>`: the
same gates as a `fleet up` by hand. Everything is installed before any credential exists, and each
secret reaches only the step that uses it, as in the preview workflow.
"""

from __future__ import annotations

import json
import re

from config.errors import Problem
from fleet.fleet_file import Fleet, FleetFileError

HEADER = """\
# Written by `volcano-platform fleet workflow --fleet {fleet_file}` (`make deploy-workflow`) from the
# fleet file: change the waves there and write this file again; a test keeps the two equal.
#
# After a merge to main, the fleet's waves in order ({order}). Each wave is one job with a leg per
# stack, in the wave's GitHub environment (its reviewers approve the wave; it holds the wave's
# clusters' kubeconfigs as KUBECONFIG_<STACK> and PULUMI_CONFIG_PASSPHRASE). Each leg runs
# `volcano-platform fleet up --stack <stack>`: the offline check, preflight and the what-if on the
# cluster as it is, `pulumi up --refresh` with the policy pack, then every model and gang read back
# (docs/operations.md, "A fleet of clusters"). A wave starts only when every leg of the one before
# passed. The state backend and its credentials are configured as for preview.yml; everything is
# installed before any credential exists and each secret reaches only the step that uses it.
"""

TOP = """\
name: deploy

on:
  push:
    branches: [main]

permissions: {}

env:
  # The CLI matches the Python SDK pinned in requirements.txt (a test keeps them equal).
  PULUMI_VERSION: "@VERSION@"

jobs:
"""

WAVE_JOB = """\
  @JOB@:
    name: wave @WAVE@
@NEEDS@    if: ${{ vars.PULUMI_BACKEND_URL != '' || vars.PULUMI_CLOUD_ORGANIZATION != '' }}
    runs-on: ubuntu-latest
    timeout-minutes: 90
    permissions:
      contents: read
      id-token: write
    environment: @ENVIRONMENT@
    strategy:
      fail-fast: false
      max-parallel: @PARALLEL@
      matrix:
        include:
@MATRIX@
    concurrency:
      group: pulumi-up-${{ matrix.stack }}
      cancel-in-progress: false
    env:
      STACK: ${{ matrix.stack }}
      PULUMI_BACKEND_URL: ${{ vars.PULUMI_BACKEND_URL }}
      PULUMI_CLOUD_ORGANIZATION: ${{ vars.PULUMI_CLOUD_ORGANIZATION }}
      FLEET_FILE: @FLEET_FILE@
    steps:
      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0
        with:
          persist-credentials: false
      - uses: actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065 # v5.6.0
        with:
          python-version: "3.11"
      - name: Program and policy-pack environments (hashed locks, before any credential)
        run: |
          make .venv/.installed
          python -m venv policy/venv
          policy/venv/bin/pip install --quiet --require-hashes -r policy/requirements.txt
      - name: Go, for Volcano's own scheduling code (the what-if gate's engine)
        uses: actions/setup-go@d35c59abb061a4a6fb18e82ac0862c26744d6ab5 # v5.5.0
        with:
          go-version: "1.26"
          cache: false
      - name: The what-if's engine, cached by the hash of its sources
        uses: actions/cache@5a3ec84eff668545956fd18022155c47e93e2684 # v4.2.3
        with:
          path: ~/.cache/volcano-platform
          key: >-
            volcano-session-${{ hashFiles('volcano-session/go.mod', 'volcano-session/go.sum', 'volcano-session/*.go',
            'volcano-session/build.sh', 'volcano-apis/*') }}
      - name: Build the what-if's engine (before any credential; a no-op when cached)
        run: make volcano-session
      - name: Pulumi CLI
        uses: pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d # v7.0.0
        with:
          pulumi-version: ${{ env.PULUMI_VERSION }}
      - name: Offline check
        run: make check STACK="$STACK"
      - name: Is there a kubeconfig for this stack?
        id: gate
        env:
          KUBECONFIG_DATA: ${{ secrets[matrix.kubeconfig] }}
        run: |
          if [ -n "$KUBECONFIG_DATA" ]; then echo "ready=true" >> "$GITHUB_OUTPUT"; fi
      - name: AWS credentials (OIDC)
        if: steps.gate.outputs.ready == 'true' && vars.AWS_ROLE_ARN != ''
        uses: aws-actions/configure-aws-credentials@7474bc4690e29a8392af63c5b98e7449536d5c3a # v4.3.1
        with:
          role-to-assume: ${{ vars.AWS_ROLE_ARN }}
          aws-region: ${{ vars.AWS_REGION }}
      - name: Google Cloud credentials (OIDC)
        if: steps.gate.outputs.ready == 'true' && vars.GCP_WORKLOAD_IDENTITY_PROVIDER != ''
        uses: google-github-actions/auth@c200f3691d83b41bf9bbd8638997a462592937ed # v2.1.13
        with:
          workload_identity_provider: ${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}
          service_account: ${{ vars.GCP_SERVICE_ACCOUNT }}
      - name: Azure credentials (OIDC)
        if: steps.gate.outputs.ready == 'true' && vars.AZURE_CLIENT_ID != ''
        uses: azure/login@7184910d9eb2b1c5e48f7073824a90609bb9b6d6 # v2.3.1
        with:
          client-id: ${{ vars.AZURE_CLIENT_ID }}
          tenant-id: ${{ vars.AZURE_TENANT_ID }}
          subscription-id: ${{ vars.AZURE_SUBSCRIPTION_ID }}
      - name: Pulumi Cloud token (OIDC)
        if: steps.gate.outputs.ready == 'true' && vars.PULUMI_CLOUD_ORGANIZATION != ''
        uses: pulumi/auth-actions@1c89817aab0c66407723cdef72b05266e7376640 # v1.0.1
        with:
          organization: ${{ vars.PULUMI_CLOUD_ORGANIZATION }}
          requested-token-type: urn:pulumi:token-type:access_token:organization
      - name: Log in and select the stack (fails loudly)
        if: steps.gate.outputs.ready == 'true'
        run: .github/scripts/pulumi-login.sh "$STACK"
      - name: Gates, up and the gate after it
        if: steps.gate.outputs.ready == 'true'
        env:
          KUBECONFIG_DATA: ${{ secrets[matrix.kubeconfig] }}
          PULUMI_CONFIG_PASSPHRASE: ${{ secrets.PULUMI_CONFIG_PASSPHRASE }}
        run: .github/scripts/with-kubeconfig.sh .github/scripts/fleet-up.sh "$FLEET_FILE" "$STACK"
"""


def kubeconfig_secret(stack: str) -> str:
    """The secret holding a stack's kubeconfig, named as `.github/scripts/stacks.sh` names it."""
    return "KUBECONFIG_" + re.sub("[^A-Z0-9]", "_", stack.upper())


def job_id(wave: str) -> str:
    return f"wave-{wave}"


def deploy_workflow(fleet: Fleet, fleet_file: str, pulumi_version: str) -> str:
    """The workflow's text for `fleet` (read from `fleet_file`, relative to the project folder).
    Written as text, not dumped from data, to keep each action's version comment beside its pin."""
    _refuse_shared_secrets(fleet)
    jobs = []
    previous: str | None = None
    for wave in fleet.waves:
        legs = [{"stack": stack, "kubeconfig": kubeconfig_secret(stack)} for stack in wave.stacks]
        fields = {
            "@JOB@": job_id(wave.name),
            "@WAVE@": wave.name,
            "@NEEDS@": f"    needs: {previous}\n" if previous else "",
            "@ENVIRONMENT@": wave.github_environment,
            "@PARALLEL@": str(wave.parallel),
            "@MATRIX@": "\n".join(f"          - {json.dumps(leg)}" for leg in legs),
            "@FLEET_FILE@": json.dumps(fleet_file),
        }
        jobs.append(_fill(WAVE_JOB, fields))
        previous = job_id(wave.name)
    order = " -> ".join(wave.name for wave in fleet.waves)
    top = TOP.replace("@VERSION@", pulumi_version)
    return HEADER.format(fleet_file=fleet_file, order=order) + top + "\n".join(jobs)


def _fill(template: str, fields: dict[str, str]) -> str:
    return re.sub("|".join(fields), lambda found: fields[found.group(0)], template)


def _refuse_shared_secrets(fleet: Fleet) -> None:
    """Two stacks whose names give one secret name would read each other's cluster."""
    seen: dict[str, str] = {}
    problems = []
    for index, wave in enumerate(fleet.waves):
        for position, stack in enumerate(wave.stacks):
            secret = kubeconfig_secret(stack)
            if secret in seen:
                problems.append(Problem(f"waves[{index}].stacks[{position}]",
                                        f"would use the secret {secret} of stack `{seen[secret]}`",
                                        "rename one of the two stacks", stack))  # fmt: skip
            seen.setdefault(secret, stack)
    if problems:
        raise FleetFileError(problems, fleet.path)
