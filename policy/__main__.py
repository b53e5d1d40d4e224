"""Entry point of the policy pack: `pulumi preview --policy-pack policy`.

Serves the pack to the Pulumi engine (it never returns); tests import `policy.pack` instead.
"""

import sys
from pathlib import Path

# The pack runs with this folder as its root; the rules import the project's shared constants.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy.pack import NAME, POLICIES

PolicyPack(name=NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
