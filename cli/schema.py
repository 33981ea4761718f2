"""`trainyard schema`: print the JSON Schema of a stack file (preflight/stack_schema.py), or rewrite
docs/stack-schema.json with it."""

from __future__ import annotations

import argparse

from cli.parsing import Verbs, add_verb
from preflight.stack_schema import SCHEMA_PATH, schema_text

SUMMARY = "the JSON Schema of a stack file, for editors (yaml-language-server)"
EPILOG = """\
A stack file names it in its first line (docs/editor.md):
  # yaml-language-server: $schema=./docs/stack-schema.json

examples:
  trainyard schema > /tmp/stack-schema.json   print the schema
  trainyard schema --write                    rewrite docs/stack-schema.json (after a model changed)
  make stack-schema
"""


def add(verbs: Verbs) -> None:
    schema = add_verb(verbs, "schema", SUMMARY, EPILOG, run, [])
    schema.add_argument("--write", action="store_true", help=f"write it to {SCHEMA_PATH.name} in docs/")


def run(args: argparse.Namespace) -> int:
    text = schema_text()
    if args.write:
        SCHEMA_PATH.write_text(text)
        print(f"Wrote {SCHEMA_PATH.relative_to(SCHEMA_PATH.parents[1])}")
    else:
        print(text, end="")
    return 0
