"""The flow engine's approximation of VL arbitration against a packet-by-packet
arbiter written here from the IBA rules (the reference), with every VL backlogged:
the case the approximation claims to match. Rates are measured from the engine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qos_samples import two_flows

from netsteer.qos.config import parse_qos
from netsteer.qos.flowshare import DEFAULT_PACKET, vl_shares
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario


def reference_shares(high, low, limit, vls, packet=DEFAULT_PACKET, packets=200_000):
    """Bytes share per VL when every VL in ``vls`` always has full packets ready:
    the high table is served while fewer than ``limit`` x 4 KiB went out in a row
    (255: always), an entry sends while its weight (x 64 B) is not used up."""
    sent = dict.fromkeys(vls, 0)
    state = {"high": [0, None], "low": [0, None]}
    tables = {"high": [(v, w * 64) for v, w in high if w > 0 and v in vls],
              "low": [(v, w * 64) for v, w in low if w > 0 and v in vls]}
    run = 0
    for _ in range(packets):
        use = "high" if tables["high"] and (limit == 255 or run == 0 or run < limit * 4096 or not tables["low"]) else "low"
        t, st = tables[use], state[use]
        if st[1] is None or st[1] <= 0:
            if st[1] is not None:
                st[0] = (st[0] + 1) % len(t)
            st[1] = t[st[0]][1]
        vl = t[st[0]][0]
        st[1] -= packet
        sent[vl] += packet
        run = run + packet if use == "high" else 0
    total = sum(sent.values())
    return {v: b / total for v, b in sent.items()}


CASES = [
    # (vlarb_high, vlarb_low, high_limit, the SL of job mpi, of job io)
    ([[0, 4]], [[1, 64]], 255, 0, 1),     # strict: the high VL takes the link
    ([[0, 4]], [[1, 64]], 0, 0, 1),       # one high packet, then one low
    ([[0, 4]], [[1, 64]], 10, 0, 1),      # 10 x 4 KiB of high, then one low packet
    ([[0, 200]], [[1, 1]], 3, 0, 1),
    ([], [[0, 255], [1, 34]], 0, 0, 1),   # low table only: 8 packets against 2
    ([], [[0, 16], [1, 8]], 0, 0, 1),     # both below one packet: one each
    ([], [[0, 100], [1, 1], [0, 40]], 0, 0, 1),  # VL 0 listed twice
]


@pytest.mark.parametrize("high,low,limit,sl_mpi,sl_io", CASES)
def test_two_backlogged_vls_share_like_the_arbiter(high, low, limit, sl_mpi, sl_io):
    qos = f"""\
max_vls: 2
high_limit: {limit}
vlarb_high: {high}
vlarb_low: {low}
sl2vl: {[s % 2 for s in range(16)]}
classes:
  - {{name: a, sl: {sl_mpi}, jobs: [mpi]}}
  - {{name: b, sl: {sl_io}, jobs: [io]}}
"""
    built = build_scenario(parse_scenario(two_flows(qos)))
    res = run_scenario(built, sample=False)
    # both 100 MB flows cross host 3's link (1 GB/s); the first to finish had the larger share
    t = np.sort(res.completion_ns.astype(float))
    first = int(np.argmin(res.completion_ns))
    share_first = 1e8 / t[0]  # bytes per ns, over the link's 1 byte per ns
    ref = reference_shares(high, low, limit, {0, 1})
    vl_first = (sl_mpi if first == 0 else sl_io) % 2
    assert share_first == pytest.approx(ref[vl_first], rel=2e-3)
    # the work is conserved: the second finishes when 200 MB went through
    assert t[1] == pytest.approx(2e8, rel=1e-6)


def test_strict_high_table_is_a_priority_class():
    q = parse_qos({"max_vls": 2, "high_limit": 255, "vlarb_high": [[0, 4]], "vlarb_low": [[1, 64]]})
    from netsteer.qos.flowshare import flow_priority_weight

    pri, w = flow_priority_weight(q.port(), [0, 1, 1], base_priority=[0, 0, 1])
    assert pri.tolist() == [0, 1, 3]


def test_per_port_type_tables_are_resolved():
    q = parse_qos({"max_vls": 4, "high_limit": 3, "vlarb_low": "0:8,1:8", "ports": {"ca": {"high_limit": 255},
                                                                                    "swe": {"vlarb_low": "2:1"}}})
    assert q.port("ca").high_limit == 255 and q.port("ca").vlarb_low == [(0, 8), (1, 8)]
    assert q.port("swe").high_limit == 3 and q.port("swe").vlarb_low == [(2, 1)]
    assert q.port("sw0").vlarb_low == [(0, 8), (1, 8)]


entries = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 255)), max_size=4)


@settings(max_examples=40, deadline=None)
@given(high=entries, low=entries, limit=st.sampled_from([0, 1, 2, 3, 10, 40, 255]))
def test_shares_match_the_arbiter_for_any_tables(high, low, limit):
    q = parse_qos({"max_vls": 3, "high_limit": limit, "vlarb_high": [list(e) for e in high],
                   "vlarb_low": [list(e) for e in low]})
    served = {v for v, w in high + low if w > 0}
    if not served:
        return
    ref = reference_shares(high, low, limit, served, packets=20_000)
    got = vl_shares(q.port())
    assert set(got) == served
    for vl in served:
        table, share = got[vl]
        if limit == 255 and table == "low" and any(w > 0 for _, w in high):
            # strict: a low VL gets nothing while the high table is backlogged
            assert ref[vl] == 0
        else:
            assert share == pytest.approx(ref[vl], abs=0.01), (vl, got, ref)


@pytest.mark.parametrize("qos, shared", [
    ("{classes: [{name: a, sl: 0, jobs: [a]}, {name: b, sl: 1, jobs: [b]}]}", True),  # max_vls 1 by default
    ("{max_vls: 2, classes: [{name: a, sl: 0, jobs: [a]}, {name: b, sl: 1, jobs: [b]}]}", False),
    ("{max_vls: 4, sl2vl: '0,0,2,3,0,0,0,0,0,0,0,0,0,0,0,0', classes: [{name: a, sl: 0, jobs: [a]}, "
     "{name: b, sl: 1, jobs: [b]}]}", True),
    ("{classes: [{name: a, sl: 3, jobs: [a]}, {name: b, sl: 3, jobs: [b]}]}", False),  # one SL: meant together
])
def test_classes_of_different_sls_on_one_vl_get_a_note(qos, shared):
    """Two 400 MiB flows into one host: on one VL they finish together, and the run
    says which classes share which VL; on VLs of their own, no note."""
    from netsteer.report.result import result_dict

    text = f"""
name: q
topology: {{kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 1us}}
routing: {{engine: dmodk}}
jobs:
  - {{name: a, flows: [{{src: 0, dst: 3, bytes: 400MiB}}]}}
  - {{name: b, flows: [{{src: 1, dst: 3, bytes: 400MiB}}]}}
qos: {qos}
"""
    b = build_scenario(parse_scenario(text, file="q.yaml"))
    out = result_dict(b, run_scenario(b))
    if shared:
        (note,) = out["notes"]
        assert note.startswith("classes a (SL 0) and b (SL 1) share VL 0")
        assert out["jobs"][0]["completion_s"] == pytest.approx(out["jobs"][1]["completion_s"])
    else:
        assert "notes" not in out


def test_idle_vls_give_their_turns_to_the_busy_ones():
    # high limit 0: one high packet, one low packet; VLs 2 and 3 have no flow, so VL 1
    # has every low turn (IBA: an entry whose VL has nothing ready is skipped): 50/50
    qos = """\
max_vls: 4
high_limit: 0
vlarb_high: "0:4"
vlarb_low: "1:4,2:4,3:4"
sl2vl: [0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3]
classes:
  - {name: a, sl: 0, jobs: [mpi]}
  - {name: b, sl: 1, jobs: [io]}
"""
    built = build_scenario(parse_scenario(two_flows(qos)))
    res = run_scenario(built, sample=False)
    t = np.sort(res.completion_ns.astype(float))
    assert t[0] == pytest.approx(2e8, rel=1e-3)  # both at half the link to the end
    s = vl_shares(parse_qos({"max_vls": 4, "high_limit": 0, "vlarb_high": "0:4",
                             "vlarb_low": "1:4,2:4,3:4"}).port(), active={0, 1})
    assert s == {0: ("high", 0.5), 1: ("low", 0.5)}
