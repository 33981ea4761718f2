"""docs/policies.md's table of every policy the pack serves: its name, its default level and what it holds, from
the rule's own docstring (policies/rules.py POLICIES). `python -m preflight.checks.policy_docs` rewrites it."""

from __future__ import annotations

from policies import rules
from preflight.doc_blocks import DOCS, with_block

DOC = DOCS / "policies.md"
BLOCK = "policies"


def doc_table() -> str:
    lines = ["| policy | default level | what it holds |", "| --- | --- | --- |"]
    for policy in rules.POLICIES:
        level = "mandatory" if policy.enforcement_level == rules.MANDATORY else "advisory"
        lines.append(f"| `{policy.name}` | {level} | {policy.description} |")
    return "\n".join(lines)


def documented(text: str) -> str:
    return with_block(text, BLOCK, doc_table())


if __name__ == "__main__":
    DOC.write_text(documented(DOC.read_text()))
