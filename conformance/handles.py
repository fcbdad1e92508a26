"""Ray's actor handles as the suite calls them.

A class wrapped by `ray.remote()` is typed as the class it wrapped (no `.remote`), and Ray's own
`ActorHandle[T]` types any method it does not declare as `Never`, which mypy reads as "the rest of
this function never runs" and stops checking. So where the suite calls an actor's methods, the
handle is an `Actor`: every attribute is a method called with `.remote(...)`, which returns a ref.
Where a handle is only killed, compared or passed on, Ray's `ActorHandle[Any]` says so.
"""
from __future__ import annotations

from typing import Any, Protocol


class RemoteMethod(Protocol):
    """An actor method as the caller sees it: `.remote(...)` submits the call and returns its ref."""

    def remote(self, *args: Any, **kwargs: Any) -> Any: ...   # an ObjectRef (Any: Ray types its refs loosely)

    def options(self, **options: Any) -> RemoteMethod: ...   # the call's options (tensor_transport=...)


class Actor(Protocol):
    """A Ray actor handle whose methods the suite calls (any name: the actor's class decides)."""

    def __getattr__(self, name: str) -> RemoteMethod: ...
