"""Read a Terraform SDKv2 provider's Go source far enough to know which fields force a new resource.

Only what the Google provider's resource schemas use: ``map[string]*schema.Schema{...}`` literals, ``&schema.Schema``
and ``&schema.Resource`` literals, package-level ``var``s, helper functions that return one of those,
``tpgresource.MergeSchemas`` and the IAM resource builders, plus ``customdiff.ForceNewIfChange`` /
``ForceNewIf`` in ``CustomizeDiff``. What it cannot resolve it reports, so the generator fails loudly instead
of guessing.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

OPENERS = {"{": "}", "(": ")", "[": "]"}


class Unresolved(RuntimeError):
    """An expression the reader does not know how to evaluate."""


@dataclass
class Field:
    force_new: bool = False
    block: bool = False  # Elem is a *schema.Resource: its ForceNew covers adding or removing elements only
    children: dict[str, Field] = field(default_factory=dict)


@dataclass(frozen=True)
class ConditionalForceNew:
    field: str  # the Terraform field path, dotted
    condition: str  # the Go function that decides


def _skip_string(text: str, i: int) -> int:
    quote = text[i]
    i += 1
    while text[i] != quote:
        i += 2 if (text[i] == "\\" and quote != "`") else 1
    return i + 1


def _skip_comment(text: str, i: int) -> int:
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    return text.index("*/", i) + 2


def matching(text: str, i: int) -> int:
    """The index just past the bracket that closes the one at ``i``."""
    stack = [OPENERS[text[i]]]
    i += 1
    while stack:
        char = text[i]
        if char in "\"`'":
            i = _skip_string(text, i)
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            i = _skip_comment(text, i)
            continue
        if char in OPENERS:
            stack.append(OPENERS[char])
        elif char == stack[-1]:
            stack.pop()
        i += 1
    return i


def split_top(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` outside brackets, strings and comments; comments dropped."""
    parts, current, i = [], [], 0
    while i < len(text):
        char = text[i]
        if char in "\"`'":
            end = _skip_string(text, i)
            current.append(text[i:end])
            i = end
        elif text.startswith("//", i) or text.startswith("/*", i):
            i = _skip_comment(text, i)
        elif char in OPENERS:
            end = matching(text, i)
            current.append(text[i:end])
            i = end
        elif char == separator:
            parts.append("".join(current).strip())
            current, i = [], i + 1
        else:
            current.append(char)
            i += 1
    parts.append("".join(current).strip())
    return [part for part in parts if part]


def _key_value(entry: str) -> tuple[str, str]:
    key, _, value = entry.partition(":")
    return key.strip(), value.strip()


def _body(literal: str) -> str:
    """The inside of a composite literal ``Type{...}``."""
    start = literal.index("{")
    return literal[start + 1 : matching(literal, start) - 1]


class GoSource:
    """Files of one git tree (a bare mirror and a ref), read on demand, indexed by package directory."""

    def __init__(self, git_dir: Path, ref: str, root: str = "google-beta"):
        self.git_dir, self.ref, self.root = git_dir, ref, root
        self._packages: dict[str, dict[str, str]] = {}

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.git_dir), *args], capture_output=True, text=True, check=True
        ).stdout

    def commit(self) -> str:
        return self._git("rev-parse", f"{self.ref}^{{commit}}").strip()

    def package(self, directory: str) -> dict[str, str]:
        """Top-level declarations of a package: name -> source text (funcs and vars)."""
        if directory not in self._packages:
            names = self._git("ls-tree", "--name-only", f"{self.ref}:{directory}").split()
            decls: dict[str, str] = {}
            for name in names:
                if name.endswith(".go") and not name.endswith("_test.go"):
                    decls.update(_declarations(self._git("show", f"{self.ref}:{directory}/{name}")))
            self._packages[directory] = decls
        return self._packages[directory]

    def registration(self, tf_name: str) -> tuple[str, str]:
        """(package directory, Schema expression) of ``registry.Schema{Name: "tf_name", Type: resource}``."""
        pattern = f'Name:\\s+"{tf_name}",'
        hits = self._git("grep", "-lE", pattern, self.ref, "--", f"{self.root}/services").split()
        for hit in hits:
            path = hit.split(":", 1)[1]
            text = self._git("show", f"{self.ref}:{path}")
            for match in re.finditer(r"registry\.Schema\{", text):
                literal = text[match.start() : matching(text, match.end() - 1)]
                entries = dict(_key_value(e) for e in split_top(_body(literal)))
                kind = entries.get("Type", "")
                if entries.get("Name") == f'"{tf_name}"' and "Resource" in kind and "DataSource" not in kind:
                    return str(Path(path).parent), entries["Schema"]
        raise Unresolved(f"no resource registration for {tf_name}")


def _declarations(text: str) -> dict[str, str]:
    decls = {}
    for match in re.finditer(r"^func (\w+)\([^)]*\)[^{\n]*\{", text, re.MULTILINE):
        decls[match.group(1)] = text[match.start() : matching(text, match.end() - 1)]
    for match in re.finditer(r"^var (\w+)\s*=\s*", text, re.MULTILINE):
        end = _expression_end(text, match.end())
        decls[match.group(1)] = "return " + text[match.end() : end]
    for match in re.finditer(r"^var \(", text, re.MULTILINE):
        block = text[match.end() : matching(text, match.end() - 1) - 1]
        for line in re.finditer(r"^\s*(\w+)\s*=\s*", block, re.MULTILINE):
            decls[line.group(1)] = "return " + block[line.end() : _expression_end(block, line.end())]
    return decls


def _expression_end(text: str, i: int) -> int:
    while i < len(text) and text[i] != "\n":
        if text[i] in OPENERS:
            i = matching(text, i)
        elif text[i] in "\"`'":
            i = _skip_string(text, i)
        else:
            i += 1
    return i


def _top_level_returns(decl: str) -> list[int]:
    """Where the expressions of a function's own ``return`` statements start (not those of closures)."""
    start = decl.index("{", decl.index(")")) if decl.startswith("func") else -1
    i, found = start + 1, []
    while i < len(decl):
        if decl[i] in OPENERS:
            i = matching(decl, i)
        elif decl[i] in "\"`'":
            i = _skip_string(decl, i)
        elif decl.startswith("//", i) or decl.startswith("/*", i):
            i = _skip_comment(decl, i)
        else:
            match = re.match(r"\breturn\s+", decl[i:]) if (i == 0 or not decl[i - 1].isalnum()) else None
            if match:
                found.append(i + match.end())
            i += match.end() if match else 1
    return found


IAM_BASES = {
    "ResourceIamMember": "IamMemberBaseSchema",
    "ResourceIamBinding": "IamBindingBaseSchema",
    "ResourceIamPolicy": "IamPolicyBaseSchema",
    "ResourceIamAuditConfig": "iamAuditConfigSchema",
}


class SchemaReader:
    """Evaluates schema expressions of one resource, resolving names in its package and the shared ones."""

    SHARED = ("tpgresource", "tpgiamresource")

    def __init__(self, source: GoSource):
        self.source = source

    def _lookup(self, package: str, name: str) -> tuple[str, str]:
        if "." in name:
            alias, name = name.split(".", 1)
            directory = f"{self.source.root}/{alias}"
            if alias not in self.SHARED:
                directory = f"{self.source.root}/services/{alias}"
            return directory, self.source.package(directory)[name]
        decls = self.source.package(package)
        if name in decls:
            return package, decls[name]
        raise Unresolved(f"{name} not found in {package}")

    def _returned(self, package: str, name: str) -> tuple[str, str]:
        """The expression a helper function returns (or a var's value), following ``x := expr; return x``."""
        directory, decl = self._lookup(package, name)
        returns = _top_level_returns(decl)
        if not returns:
            raise Unresolved(f"{name} returns nothing readable")
        expression = decl[returns[-1] : _expression_end(decl, returns[-1])].strip()
        if re.fullmatch(r"\w+", expression):
            assigned = re.search(rf"\b{expression}\s*:?=\s*", decl)
            if assigned:
                expression = decl[assigned.end() : _expression_end(decl, assigned.end())].strip()
        return directory, expression

    def resource(self, package: str, expression: str) -> tuple[dict[str, Field], list[ConditionalForceNew]]:
        expression = expression.strip()
        call = re.fullmatch(r"(?:tpgiamresource\.)?(ResourceIam\w+)\((.*)\)", expression, re.DOTALL)
        if call and call.group(1) in IAM_BASES:
            parent = split_top(call.group(2))[0]
            base = self.schema_map("google-beta/tpgiamresource", IAM_BASES[call.group(1)])
            return {**base, **self.schema_map(package, parent)}, []
        if _reference(expression):
            return self.resource(*self._returned(package, _reference(expression)))
        if expression.startswith("&schema.Resource{"):
            entries = dict(_key_value(e) for e in split_top(_body(expression)))
            fields = self.schema_map(package, entries["Schema"])
            conditions = _conditional(entries.get("CustomizeDiff", ""))
            return fields, conditions
        raise Unresolved(f"resource expression {expression[:80]!r}")

    def schema_map(self, package: str, expression: str) -> dict[str, Field]:
        expression = expression.strip()
        if expression.startswith("map[string]*schema.Schema{"):
            result = {}
            for entry in split_top(_body(expression)):
                key, value = _key_value(entry)
                result[key.strip('"')] = self.schema(package, value)
            return result
        merge = re.fullmatch(r"tpgresource\.MergeSchemas\((.*)\)", expression, re.DOTALL)
        if merge:
            merged: dict[str, Field] = {}
            for part in split_top(merge.group(1)):
                merged.update(self.schema_map(package, part))
            return merged
        if _reference(expression):
            return self.schema_map(*self._returned(package, _reference(expression)))
        raise Unresolved(f"schema map {expression[:80]!r}")

    def schema(self, package: str, expression: str) -> Field:
        expression = expression.strip()
        if expression.startswith(("{", "&schema.Schema{")):
            entries = dict(_key_value(e) for e in split_top(_body(expression)))
            result = Field(force_new=entries.get("ForceNew") == "true")
            elem = entries.get("Elem", "")
            if elem and not elem.startswith("&schema.Schema{"):
                result.block = True
                result.children = self._elem_fields(package, elem)
            return result
        if _reference(expression):
            return self.schema(*self._returned(package, _reference(expression)))
        raise Unresolved(f"schema {expression[:80]!r}")

    def _elem_fields(self, package: str, elem: str) -> dict[str, Field]:
        if elem.startswith("&schema.Resource{"):
            entries = dict(_key_value(e) for e in split_top(_body(elem)))
            return self.schema_map(package, entries["Schema"])
        if _reference(elem):
            directory, expression = self._returned(package, _reference(elem))
            return self._elem_fields(directory, expression)
        raise Unresolved(f"elem {elem[:80]!r}")


def _reference(expression: str) -> str:
    """The name a variable or a helper call (arguments ignored: they never carry ForceNew) refers to."""
    match = re.fullmatch(r"([\w.]+)(\(.*\))?", expression, re.DOTALL)
    return match.group(1) if match else ""


def _conditional(customize_diff: str) -> list[ConditionalForceNew]:
    found = re.finditer(r'customdiff\.ForceNewIf(?:Change)?\(\s*"([\w.]+)"\s*,\s*([\w.]+)', customize_diff)
    return [ConditionalForceNew(match.group(1), match.group(2)) for match in found]
