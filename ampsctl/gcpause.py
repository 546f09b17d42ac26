"""Pause Python's cyclic garbage collector around bulk work.

Linting configs and folding delta streams create millions of short-lived objects that
reference counting frees on its own; the cyclic collector keeps rescanning the live ones
(measured: ~10% of lint time, ~30% of `delta merge --stream`). Pausing it changes no result
and, for these workloads, not the peak memory either.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
