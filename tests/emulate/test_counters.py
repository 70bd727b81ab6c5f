"""Counter samplers (emulate/counters.py) with fake reads: no switch needed."""

from __future__ import annotations

import threading
import time

from netsteer.emulate.counters import Sampler, sampling


def test_a_failed_read_is_a_gap_and_sampling_goes_on_without_a_traceback(capfd):
    """A failing ``ovs-ofctl dump-ports`` killed the sampler thread for good (the rest
    of the run interpolated across) and printed 'Exception in thread'; now it is a
    gap in ``gaps`` and the sampler keeps reading."""
    n = {"reads": 0}

    def read():
        n["reads"] += 1
        if n["reads"] == 3:
            raise RuntimeError("s1 ovs-ofctl dump-ports failed: connection reset")
        return {"a": n["reads"]}

    s = Sampler(read, period_s=0.005)
    deadline = time.monotonic() + 10  # without the fix the thread dies at read 3
    with sampling([s]):
        while n["reads"] < 8 and time.monotonic() < deadline:
            time.sleep(0.005)
    assert len(s.gaps) == 1 and "connection reset" in s.gaps[0][1]
    assert len(s.samples) >= 7
    assert "Traceback" not in capfd.readouterr().err


def test_a_read_failing_at_shutdown_ends_the_sampler_quietly(capfd):
    """Ctrl-C reaches the ovs-ofctl children too: reads fail once the run stops."""
    stop_now = threading.Event()

    def read():
        if stop_now.is_set():
            s.stop.set()  # the run stops while this read fails
            raise RuntimeError("terminating with signal 2 (Interrupt)")
        return {"a": 0}

    s = Sampler(read, period_s=0.005)
    s.start()
    stop_now.set()
    s.join(5)
    assert not s.is_alive() and s.gaps == []
    assert "Traceback" not in capfd.readouterr().err
