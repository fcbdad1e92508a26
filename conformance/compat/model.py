"""What conformance.compat.index reads out of Python source: modules, classes, methods and their
signatures, and what a name resolves to (a Symbol, Missing, or Unknown when the source cannot
tell). Plain data: the index builds them, compat.check compares them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Protocol, Union


class Tree(Protocol):
    """Where `ray.*` source comes from: relative paths such as 'ray/util/__init__.py'."""

    def read(self, relpath: str) -> str | None: ...
    def exists(self, relpath: str) -> bool: ...
    def is_folder(self, relpath: str) -> bool: ...
    def compiled(self, relpath_stem: str) -> bool: ...


# ------------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class Param:
    name: str
    kind: str        # "posonly" | "pos" (positional or keyword) | "kwonly"
    default: bool


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    vararg: bool = False
    kwarg: bool = False

    @property
    def positional(self) -> list[Param]:
        return [p for p in self.params if p.kind in ("posonly", "pos")]

    @property
    def keywords(self) -> set[str]:
        return {p.name for p in self.params if p.kind in ("pos", "kwonly")}

    def text(self) -> str:
        parts: list[str] = []
        for p in self.params:
            if p.kind == "kwonly" and not self.vararg and "*" not in parts:
                parts.append("*")
            parts.append(p.name + ("=..." if p.default else ""))
            if p.kind == "posonly" and not any(q.kind == "posonly" for q in self.params[self.params.index(p) + 1:]):
                parts.append("/")
        if self.vararg:
            parts.insert(len(self.positional) + sum(1 for x in parts if x == "/"), "*args")
        if self.kwarg:
            parts.append("**kwargs")
        return "(" + ", ".join(parts) + ")"


@dataclass(frozen=True)
class Method:
    name: str
    kind: str        # "instance" | "static" | "class" | "property"
    sig: Signature   # without self/cls
    abstract: bool
    owner: str       # the class that defines it, "module:Class"
    line: int


@dataclass(frozen=True)
class Symbol:
    kind: str        # "module" | "class" | "function" | "value"
    module: str
    name: str = ""  # "" for a module
    node: ast.AST | None = field(default=None, compare=False, repr=False)

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module


@dataclass(frozen=True)
class Missing:
    """The source says this name does not exist. `runtime`: an attribute of a class or of an
    instance that neither its class body nor its methods' `self.x = ...` define; code elsewhere
    may still set it (Ray's register_collective_backend sets `Backend.<NAME>`), so it counts as
    missing only where another Ray's source defines it (check.py compares with the baseline)."""
    reason: str
    runtime: bool = False


@dataclass(frozen=True)
class Unknown:
    """The source cannot say (compiled module, module __getattr__, a base from outside the tree)."""
    reason: str


Resolved = Union[Symbol, Missing, Unknown]


@dataclass
class ClassInfo:
    symbol: Symbol
    bases: list[Resolved]
    methods: dict[str, Method]
    attrs: set[str]
    dataclass: bool
    kw_only: bool
    fields: list[Param]


@dataclass
class Module:
    name: str
    path: str
    tree: ast.Module
    is_package: bool


# Bases from the standard library that add no method a Ray interface relies on.
PLAIN_BASES = {"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol"}
