"""Fixtures for the OpenSM driver tests."""

from __future__ import annotations

import pytest
from ib_samples import two_switch_fabric

from netsteer.drivers.opensm.runner import tools_available
from netsteer.topology.model import Topology


@pytest.fixture
def fabric() -> Topology:
    return two_switch_fabric()


@pytest.fixture
def need_ib_tools() -> None:
    missing = tools_available()
    if missing:
        pytest.skip(f"InfiniBand tools missing: {', '.join(missing)}")
