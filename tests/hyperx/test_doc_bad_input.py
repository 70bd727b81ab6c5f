"""docs/hyperx.md's "Bad input" line for too many ranks is what the product prints
(the page had `... placement: 9 ranks do not fit ...`; the field is the job's ranks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netsteer.errors import NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

DOC = (Path(__file__).resolve().parents[2] / "docs" / "hyperx.md").read_text()


def test_too_many_ranks_is_worded_as_the_page_says():
    text = ("name: b\ntopology: {kind: hyperx, S: [2, 2], T: 2, link_bandwidth: 10Gbps}\nrouting: {engine: dor}\n"
            "jobs:\n  - {name: j, ranks: 9, program: [{op: barrier}]}\n")
    with pytest.raises(NetsteerError) as e:
        build_scenario(parse_scenario(text, file="b.yaml"))
    message = f"{e.value.field}: {e.value.reason}"
    assert message == "jobs.0.ranks: 9 ranks do not fit on 8 hosts with linear placement"
    assert f"- `{message}`" in DOC
