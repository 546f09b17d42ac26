"""A faster ``__init__`` for the frozen, slotted dataclasses built once per message.

The broker builds a ``Frame``, a ``Publish`` and an ``Ack`` for every publish it receives.
``dataclass(frozen=True)`` generates an ``__init__`` that sets each field with
``object.__setattr__(self, name, value)``: a global lookup, an attribute lookup and a generic
setattr per field, about 2.5 µs for the 20 fields of an ``Ack`` (bench/broker.py profile).
``fast_init`` replaces it with one that calls each slot's own descriptor (``member.__set__``),
bound once in a closure: the same signature, defaults, ``__post_init__`` call and resulting
object (eq, hash, repr and immutability are the dataclass's, untouched), in about half the time.

Only for slotted frozen dataclasses without ``default_factory`` or ``InitVar`` fields; anything
else raises TypeError at import time rather than building objects differently.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Replace the dataclass ``cls``'s ``__init__`` (see the module docstring); returns ``cls``."""
    params = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not params or "__slots__" not in cls.__dict__ or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"fast_init needs a frozen, slotted dataclass, not {cls.__name__}")
    namespace: dict[str, Any] = {}
    positional, keyword, body = [], [], []
    for number, param in enumerate(params):
        if not param.init or param.default_factory is not dataclasses.MISSING:
            raise TypeError(f"fast_init: {cls.__name__}.{param.name} has init=False or a default_factory")
        setter, default = f"_set{number}", f"_default{number}"
        namespace[setter] = getattr(cls, param.name).__set__
        text = param.name
        if param.default is not dataclasses.MISSING:
            namespace[default] = param.default
            text = f"{param.name}={default}"
        (keyword if param.kw_only else positional).append(text)
        body.append(f"    {setter}(self, {param.name})")
    if hasattr(cls, "__post_init__"):
        namespace["_post_init"] = cls.__post_init__  # type: ignore[attr-defined]
        body.append("    _post_init(self)")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = (f"def _make({', '.join(namespace)}):\n"
              f"  def __init__({signature}):\n" + "\n".join("  " + line for line in body) + "\n"
              "  return __init__\n")
    scope: dict[str, Any] = {}
    exec(source, {}, scope)  # noqa: S102 (source built from the dataclass's own field names)
    init = scope["_make"](**namespace)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls
