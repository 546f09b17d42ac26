"""``ampsctl client sow|subscribe --format json`` nest each message's data with its numbers as
published (``1.50``, ``1E5``, ``-0``, an integer beyond 64 bits): docs/messages.md, "Number text"."""

from __future__ import annotations

from pathlib import Path

from test_e2e_client_cli import Subscriber, cli

MESSAGE = '{"id":1,"px":1.50,"q":1E5,"big":12345678901234567890123,"z":-0}'


def test_json_output_keeps_number_text(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        subscriber = await Subscriber.start(uri, "-t", "orders", "--count", "1", "--format", "json")
        done = await cli("client", "publish", uri, "-t", "orders", "-d", MESSAGE)
        assert done.code == 0, done.err
        done = await subscriber.finish()
        assert done.code == 0 and f'"data":{MESSAGE}' in done.out, done.out + done.err
        done = await cli("client", "sow", uri, "-t", "orders", "--format", "json")
        assert done.code == 0 and f'"data":{MESSAGE}' in done.out, done.out + done.err

    broker_run(scenario)
