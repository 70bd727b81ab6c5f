"""The emulated reproductions' figures, from reports shaped as the runs write them."""

from __future__ import annotations

from netsteer.emulate.plots import hyperx_links, overhead


def _png(p):
    return p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_overhead_figures_are_written_with_and_without_simulator_figures(tmp_path):
    rows = [{"bytes": b, "plain": {"latency_us": 600.0 + b, "bandwidth_mbs": b / 1e4},
             "tagged": {"latency_us": 610.0 + b}, "latency_overhead_us": 10.0,
             "simulated": {"plain": {"latency_us": 27.0, "bandwidth_mbs": 1.0}} if b > 1 else {}}
            for b in (1, 2, 4, 65536)]
    files = overhead({"sizes": rows, "link_mbs": 12.5, "repeat": 3}, tmp_path)
    assert files == ["fig11_bandwidth.png", "fig12_latency.png", "fig13_latency_overhead.png"]
    assert all(_png(tmp_path / f) for f in files)


def test_hyperx_figures_cut_each_run_out_of_the_sampled_series(tmp_path):
    t = [0.05 * i for i in range(200)]
    rep = {"links": {"t_s": t, "bps": {"EPS7->EPS8": [8e6] * 200, "EPS1->SiP": [4e6] * 200},
                     "runs": {"standard": [0.0, 4.0], "steered": [5.0, 9.0]}},
           "link_bps_emulated": 16e6,
           "standard": {"ring_bps": 6e6}, "steered": {"ring_bps": 10e6},
           "simulated": {"standard": {"ring_bps": 7e6}, "steered": {"ring_bps": 16e6}}}
    files = hyperx_links(rep, tmp_path)
    assert files == ["fig3c_standard.png", "fig3d_steered.png"]
    assert all(_png(tmp_path / f) for f in files)
