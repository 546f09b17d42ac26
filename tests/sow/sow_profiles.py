"""Hypothesis profiles for the SOW tests (imported by the property tests, not a conftest).

No project-wide profile convention exists, so the profiles are registered here and applied
only to the SOW property tests (they never change other packages' settings):

* ``sow-default``: few examples, so ``make test`` stays fast (the whole stateful file runs
  in well under 30 s);
* ``dev``: 1,000 examples, selected with ``HYPOTHESIS_PROFILE=dev``::

    HYPOTHESIS_PROFILE=dev .venv/bin/pytest -q tests/sow/test_recovery_stateful.py
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "sow-default", max_examples=300, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "dev", max_examples=1000, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

PROFILE_NAME = "dev" if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else "sow-default"
SOW_PROFILE = settings.get_profile(PROFILE_NAME)
