"""A run says where its QoS model differs from the qos section as OpenSM applies it."""

from __future__ import annotations

import json

import pytest

HEAD = """\
name: n
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 8Gbps, link_latency: 100ns}
routing: {engine: dmodk}
jobs:
  - name: a
    flows: [{src: 0, dst: 3, bytes: 8MB}]
  - name: b
    flows: [{src: 1, dst: 3, bytes: 8MB}]
"""
TWO = "  classes: [{name: ca, sl: 0, jobs: [a]}, {name: cb, sl: 1, jobs: [b]}]\n"

CASES = {
    # HCA tables: written to opensm.conf (b strict high on h-ports), simulated with swe's
    "ca-tables": (HEAD + "qos:\n  max_vls: 2\n  vlarb_low: '0:64,1:64'\n"
                  "  ports: {ca: {high_limit: 255, vlarb_high: '1:40', vlarb_low: '0:64'}}\n" + TWO,
                  [], "the ca ports' own tables are written to opensm.conf but not simulated"),
    # a 4 KiB MTU: 33:64 is one packet against one at packet level, 1 against 2 at flow level
    "mtu": (HEAD + "fidelity: packet\npacket: {mtu: 4KiB}\nqos:\n  max_vls: 2\n  vlarb_low: '0:33,1:64'\n" + TWO,
            ["--fidelity", "flow"], "not the 4160 B of packet.mtu 4096 B"),
    # scenario flows carry no paths: a path_prefix class can match none
    "path-prefix": (HEAD + "qos:\n  max_vls: 2\n  high_limit: 255\n  vlarb_high: '1:40'\n  vlarb_low: '0:64'\n"
                    "  classes: [{name: ckpt, sl: 1, path_prefix: /scratch/ckpt}]\n",
                    [], "qos class 'ckpt' (qos.classes.0) matches no flow: path_prefix"),
    # a finite limit, both tables, three VLs: the flow approximation can be 25% off (a: 12.0 ms flow, 16.2 packet)
    "finite-limit": (HEAD + "  - name: c\n    flows: [{src: 2, dst: 1, bytes: 1MB}]\n"
                     "qos:\n  max_vls: 4\n  high_limit: 0\n  vlarb_high: '0:4'\n  vlarb_low: '1:4,2:4,3:4'\n"
                     + TWO.replace("]\n", ", {name: cc, sl: 2, jobs: [c]}]\n"),
                     [], "high_limit 0 with traffic in both tables on 3 VLs"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_run_notes_where_the_model_differs(tmp_path, cli, case):
    text, args, note = CASES[case]
    f = tmp_path / "s.yaml"
    f.write_text(text)
    code, out, err = cli("run", f, "--json", *args)
    assert code == 0, err
    assert [n for n in json.loads(out).get("notes", []) if note in n], json.loads(out).get("notes")


def test_opensm_conf_notes_a_class_matching_no_flow(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(CASES["path-prefix"][0])
    code, out, err = cli("qos", "opensm-conf", f, "--json")
    assert code == 0, err
    assert [n for n in json.loads(out)["notes"] if "'ckpt'" in n and "matches no flow" in n]


def test_the_shipped_example_gets_no_approximation_note(cli):
    # two busy VLs: a port carries both or one, and the shares are right
    code, out, err = cli("run", "scenarios/qos-mpi-vs-io.yaml", "--json")
    assert code == 0, err
    assert not [n for n in json.loads(out).get("notes", []) if "25% off" in n]
