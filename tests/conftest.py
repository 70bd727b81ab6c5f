"""Shared test policy.

Tests that run real components (SimGrid, OpenSM on ibsim, Open vSwitch) are marked
and skip on a machine that lacks them; in CI (``CI=true``), where the set-up installs
every one of them, such a skip is a failure: the real-component tier must not pass
vacuously.

Property tests explore new random cases on every developer run; in CI they replay a
fixed derivation of cases, so a gate run is reproducible and a case found locally is
kept as an ``@example``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

REAL = ("simgrid", "ib", "ovs")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and any(item.get_closest_marker(m) for m in REAL):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where real components must run: {report.longrepr}"
