"""Entry point the Pulumi CLI runs for `pulumi preview --policy-pack policies/`: construct the pack."""

import sys
from pathlib import Path

# The CLI runs this file with policies/ as the working directory; the rules import `policies.*` and
# `components.facts.topology`/`components.facts.cost`, so the project root must be importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policies.rules import pack_arguments

PolicyPack(**pack_arguments())
