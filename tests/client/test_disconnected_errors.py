"""Every caller waiting on a dead connection gets its own Disconnected: one shared instance
raised from many tasks would grow a traceback with every raise (quadratic to print)."""

from __future__ import annotations

import asyncio

import pytest

from ampsctl.client.errors import Disconnected
from ampsctl.client.wire import Exchange


def test_each_waiter_gets_a_fresh_error_with_its_own_short_traceback() -> None:
    async def scenario() -> list[Disconnected]:
        exchange = Exchange("1")
        exchange.queue.put_nowait(Disconnected("the server closed the connection"))
        errors = []
        for _ in range(50):
            with pytest.raises(Disconnected) as caught:
                await exchange.next()
            errors.append(caught.value)
        return errors

    errors = asyncio.run(scenario())
    assert len({id(error) for error in errors}) == len(errors)
    assert {error.message for error in errors} == {"the server closed the connection"}
    assert {error.code for error in errors} == {"CLIENT-DISCONNECTED"}
    depth = [sum(1 for _ in _frames(error.__traceback__)) for error in errors]
    assert max(depth) == min(depth)  # not one frame more per raise


def _frames(tb):  # type: ignore[no-untyped-def]
    while tb is not None:
        yield tb
        tb = tb.tb_next
