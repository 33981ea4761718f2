"""What several policies derive from the same resources, derived once per evaluation.

Up to four resource policies read one node pool's facts, five stack policies read every pool's facts and two the
cost estimate. Preflight (preflight/engine/sdk.py) hands every policy of one evaluation the very same property
objects, so a derivation kept with the objects it was derived from, and given again while those same objects come
back, is done once per evaluation. Under `pulumi preview --policy-pack policies/` each policy gets property objects
of its own: the objects never come back, and each policy derives its own, exactly as without this. Only the last
derivation is kept, so nothing grows in a long-lived analyzer.

A derivation kept here is shared by the policies: it must depend on nothing but the objects it keys on, and its
result must not be changed (tuples, frozen dataclasses). Only the analyzer's read-only proxies are kept on: a plain
dict (preflight's own checks pass the plan's inputs) may be changed in place between two calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable
from typing import Any


def _kept_on(props: Any) -> bool:
    return not isinstance(props, (dict, list))


def _same(held: tuple[Any, ...], key: tuple[Any, ...]) -> bool:
    """Keys of (type, URN, name, props) tuples: equal types, URNs and names, and the very same property objects."""
    return len(held) == len(key) and all(
        old[:-1] == new[:-1] and old[-1] is new[-1] for old, new in zip(held, key, strict=True)
    )


def once_per_resource[Derived](derive: Callable[[str, str, Any], Derived]) -> Callable[[str, str, Any], Derived]:
    """``derive(name, urn, props)`` of one resource, given again while the same property object comes back."""
    last: tuple[tuple[str, str, Any], Derived] | None = None

    @functools.wraps(derive)
    def derived(name: str, urn: str, props: Any) -> Derived:
        nonlocal last
        if not _kept_on(props):
            return derive(name, urn, props)
        held = last  # one read: another thread may replace it meanwhile
        if held is not None and held[0][2] is props and held[0][:2] == (name, urn):
            return held[1]
        value = derive(name, urn, props)
        last = ((name, urn, props), value)  # it holds the object, so its identity is not reused while kept
        return value

    return derived


def once_per_stack[Derived](
    types: Collection[str],
) -> Callable[[Callable[[list[Any]], Derived]], Callable[[Iterable[Any]], Derived]]:
    """``derive`` of a stack's resources of these types, given again while the same property objects come back
    (with the same types, URNs and names)."""

    def decorate(derive: Callable[[list[Any]], Derived]) -> Callable[[Iterable[Any]], Derived]:
        last: tuple[tuple[Any, ...], Derived] | None = None

        @functools.wraps(derive)
        def derived(resources: Iterable[Any]) -> Derived:
            nonlocal last
            chosen = [resource for resource in resources if resource.resource_type in types]
            if not all(_kept_on(r.props) for r in chosen):
                return derive(chosen)
            key = tuple((r.resource_type, r.urn, r.name, r.props) for r in chosen)
            held = last  # one read: another thread may replace it meanwhile
            if held is not None and _same(held[0], key):
                return held[1]
            value = derive(chosen)
            last = (key, value)  # the key holds the objects, so their identities are not reused while kept
            return value

        return derived

    return decorate
