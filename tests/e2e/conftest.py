"""Fixtures of the end-to-end tests; the harness itself is e2e_helpers.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_helpers import broker_runner


@pytest.fixture
def broker_run(tmp_path: Path) -> Callable[..., None]:
    """``broker_run(scenario, **settings_changes)``: run ``scenario(uri, tmp_path)`` against a fresh broker."""
    return broker_runner(tmp_path)
