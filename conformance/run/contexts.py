"""The one way a check gets its context: `open_check_context`, behind every area's `<area>_ctx`
fixture (conformance.run.fixtures registers one per area in the registry).

The kind a check receives is its area's declared rule over the check's data (Area.context: its
checklist tags, its cluster shape), never its annotation: `annotation_problem` holds the
annotation equal to that kind (tests/unit/test_check_context.py, and the fixture before a check).
The area's `opens` function does the area's setup and teardown around the check; what it opens
that outlives the check (the run's transport pools, the collective members holding units, the
collective section) it hands to `Lifetimes`, closed when the module or the session ends.
"""
from __future__ import annotations

import inspect
import typing
from typing import TYPE_CHECKING, Any, Callable, Iterator

from conformance.catalog.area import Area, load_ref
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.catalog.data import Check


class Closers:
    """What to close when a scope (a module of checks, the session) ends: one callable per key,
    the first registered kept, all run in reverse order; the first failure raised after all ran."""

    def __init__(self) -> None:
        self._closers: dict[str, Callable[[], None]] = {}

    def once(self, key: str, close: Callable[[], None]) -> None:
        self._closers.setdefault(key, close)

    def close_all(self) -> None:
        first: BaseException | None = None
        while self._closers:
            _, close = self._closers.popitem()
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - the others still close; the first is raised below
                first = first or exc
        if first is not None:
            raise first


class Lifetimes:
    """The scopes longer than a check that an area's `opens` may hand things to close."""

    def __init__(self, module: Closers, session: Closers) -> None:
        self.module = module      # closed when the check module ends (devices back for the next area)
        self.session = session    # closed when the session ends, before the report is written


def context_kind(area: Area, check: Check, shape_name: str) -> type[CheckContext]:
    """The context class a check of `area` receives: its area's rule over the check's data."""
    if area.context is None:
        raise LookupError(f"area {area.name!r} declares no context (Area.context)")
    ref = area.context.kind_ref(check.tags, shape_name)
    kind = load_ref(ref)
    if not (inspect.isclass(kind) and issubclass(kind, CheckContext)):
        raise TypeError(f"area {area.name!r}: context {ref} is not a CheckContext subclass")
    return kind


def annotation_problem(area: Area, check: Check, shape_name: str, function: Any, *, required: bool = True) -> str | None:
    """One line when the check function's `<area>_ctx` annotation is not the kind its data picks
    (also when it has none, if `required`: the bundled checks are all annotated)."""
    picked = context_kind(area, check, shape_name)
    try:
        annotated = typing.get_type_hints(function).get(f"{area.name}_ctx")
    except NameError as exc:
        annotated = f"an unresolvable name ({exc})"
    if annotated is picked or (annotated is None and not required):
        return None
    name = getattr(annotated, "__name__", str(annotated))
    return (f"{check.id} ({function.__module__}.{function.__qualname__}): {area.name}_ctx is annotated {name}, but "
            f"the area's rule gives this check {picked.__name__} (tags: {', '.join(check.tags) or 'none'}; shape: "
            f"{shape_name}; Area.context in conformance/areas/{area.name}/area.py)")


def open_check_context(area: Area, base: CheckContext, lifetimes: Lifetimes) -> Iterator[CheckContext]:
    """The check's context of the kind its data picks, opened by its area and closed after it."""
    assert area.context is not None   # registry_problems refuses an area without one before any check
    kind = context_kind(area, base.check, base.shape_name)
    opens: Callable[[type[CheckContext], CheckContext, Lifetimes], Iterator[CheckContext]] = load_ref(area.context.opens)
    yield from opens(kind, base, lifetimes)
