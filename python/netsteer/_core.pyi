"""Type stubs for the compiled engine (crates/netsteer-py)."""

from typing import Any, final

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

__all__ = ["Engine", "set_sample_limit", "check_mpi_steps", "mpi_step_totals", "maxmin", "walk_tables", "least_used_rows", "permutation", "__version__"]

__version__: str

def check_mpi_steps(ranks: int, steps: list[tuple]) -> None:
    """Refuse a program a ``ranks``-rank job cannot run, as ``Engine.add_mpi_job``
    would: ``ValueError("program step i: reason")``."""

def mpi_step_totals(ranks: int, steps: list[tuple], envelope_bytes: int) -> list[tuple[int, int]]:
    """Per step, ``(flows, bytes)`` one execution makes as the flow DAG holds them
    (bytes exact, envelopes included); the program checked as ``check_mpi_steps`` does."""

def set_sample_limit(values: int) -> None:
    """Cap the counter samples (samples x channels) of engines made from now on;
    a run that would sample past it raises ``MemoryError``."""

@final
class Engine:
    """The engine: channels with capacity (bytes/s) and latency (ns); flow level
    (a sharing model), or packet level with ``packet`` parameters."""

    # a PyO3 class is made by __new__ (stubtest checks the signature against it)
    def __new__(
        cls,
        capacity: npt.NDArray[np.float64],
        latency_ns: npt.NDArray[np.int64],
        sharing: str = "maxmin",
        tcp_gamma: float | None = None,
        packet: dict[str, Any] | None = None,
        ticks_per_ns: int = 1,
    ) -> Self: ...
    @property
    def fidelity(self) -> str: ...
    def set_sl(self, flows: npt.NDArray[np.int64], sl: npt.NDArray[np.int64]) -> None: ...
    def set_priority_weight(
        self,
        flows: npt.NDArray[np.int64],
        priority: npt.NDArray[np.int64],
        weight: npt.NDArray[np.float64],
    ) -> None: ...
    def path_arena_len(self) -> int: ...
    def packet_report(self) -> dict[str, Any] | None: ...
    def add_flows(
        self,
        bytes: npt.NDArray[np.float64],
        path_offsets: npt.NDArray[np.int64],
        path_channels: npt.NDArray[np.int64],
        start_ns: npt.NDArray[np.int64],
        delay_ns: npt.NDArray[np.int64],
        weight: npt.NDArray[np.float64],
        priority: npt.NDArray[np.int64],
        dep_offsets: npt.NDArray[np.int64],
        deps: npt.NDArray[np.int64],
    ) -> int: ...
    def run(self, until_ns: int | None = None, max_events: int | None = None) -> str: ...
    @property
    def now(self) -> int: ...
    @property
    def unfinished(self) -> int: ...
    @property
    def n_flows(self) -> int: ...
    @property
    def sharing(self) -> str: ...
    def set_sample_interval(self, interval_ns: int) -> None: ...
    def set_sample_cap(self, samples: int) -> None: ...
    @property
    def sample_interval_ns(self) -> int: ...
    def set_merge_window(self, window_ns: int) -> None: ...
    def set_channels_up(self, channels: npt.NDArray[np.int64], up: bool) -> None: ...
    def set_capacity(self, channels: npt.NDArray[np.int64], capacity: float) -> None: ...
    def reroute(
        self,
        flows: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64],
        channels: npt.NDArray[np.int64],
    ) -> None: ...
    def set_background(self, flows: npt.NDArray[np.int64]) -> None: ...
    def stop_flows(self, flows: npt.NDArray[np.int64]) -> None: ...
    def completion_ns(self) -> npt.NDArray[np.int64]: ...
    def release_ns(self) -> npt.NDArray[np.int64]: ...
    def rates(self) -> npt.NDArray[np.float64]: ...
    def sent_bytes(self) -> npt.NDArray[np.float64]: ...
    def unfinished_flows(self) -> npt.NDArray[np.uint32]: ...
    def flows_on(self, channels: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]: ...
    def flow_sl(self, flow: int) -> int: ...
    def flow_path(self, flow: int) -> npt.NDArray[np.uint32]: ...
    def channel_bytes(self) -> npt.NDArray[np.float64]: ...
    def samples(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]: ...
    def stats(self) -> dict[str, int]: ...
    # streamed MPI jobs (netsteer.sim.stream)
    def set_router_tables(
        self,
        table: npt.NDArray[np.int32],
        row_of: npt.NDArray[np.int64],
        host_port: npt.NDArray[np.int64],
        out_channel: npt.NDArray[np.int64],
        channel_dst: npt.NDArray[np.int64],
        is_host: npt.NDArray[np.bool_],
        give_up: npt.NDArray[np.bool_],
        host_nodes: npt.NDArray[np.int64],
        groups: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], str],
    ) -> None:
        """``groups``: ECMP group pointers and ports (CSR) and the hash, ``"dst"`` or
        ``"src-dst"`` (a message has no flow id)."""
    def set_router_pgft(
        self,
        levels: int,
        down: list[int],
        up: list[int],
        parallel: list[int],
        labels: npt.NDArray[np.int64],
        level: npt.NDArray[np.int64],
        out_channel: npt.NDArray[np.int64],
        channel_dst: npt.NDArray[np.int64],
    ) -> None: ...
    def route_path(self, src: int, dst: int) -> npt.NDArray[np.uint32]: ...
    def add_mpi_job(
        self,
        hosts: npt.NDArray[np.int64],
        steps: list[tuple],
        repeat: int = 1,
        start_ns: int = 0,
        priority: int = 0,
        weight: float = 1.0,
        envelope_bytes: int = 0,
        sl: int = 0,
    ) -> int: ...
    def mpi_progress(self) -> dict[str, int]: ...
    def mpi_spans(self) -> dict[str, npt.NDArray | list[int]]: ...  # "bytes": exact Python ints
    def mpi_jobs(self) -> list[tuple[int, int]]: ...
    def mpi_message_times(self) -> list[dict[str, float] | None]: ...

def maxmin(
    capacity: npt.NDArray[np.float64],
    offsets: npt.NDArray[np.int64],
    channels: npt.NDArray[np.int64],
    weight: npt.NDArray[np.float64],
    bound: npt.NDArray[np.float64] | None = None,
    priority: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.float64]: ...

def walk_tables(
    table: npt.NDArray[np.int32],
    row_of: npt.NDArray[np.int64],
    host_port: npt.NDArray[np.int64],
    out_channel: npt.NDArray[np.int64],
    channel_dst: npt.NDArray[np.int64],
    is_host: npt.NDArray[np.bool_],
    give_up: npt.NDArray[np.bool_],
    src_nodes: npt.NDArray[np.int64],
    dst_hosts: npt.NDArray[np.int64],
    dst_nodes: npt.NDArray[np.int64],
    limit: int,
    groups: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], str],
    src_hosts: npt.NDArray[np.int64],
    flow_ids: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]] | None:
    """Paths as CSR, ECMP ``groups`` (pointers, ports, hash) resolved by
    ``flow_hash`` of ``src_hosts``, ``dst_hosts`` and ``flow_ids``; None when the
    general walk must take over."""

def least_used_rows(
    table: npt.NDArray[np.int32],
    rows: npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
    ports: npt.NDArray[np.int32],
    n_slots: int,
) -> None:
    """Balance the group entries (``-2 - g``) of ``rows`` of a C-contiguous ``table``
    in place: each takes the member of ``ports[start[g]:start[g + 1]]`` its row has
    used least so far (first on ties). Raises ValueError, changing nothing, on an
    index out of range."""

def permutation(seed: int, n: int) -> list[int]:
    """``numpy.random.default_rng(seed).permutation(n)`` as a list, bit for bit,
    without importing ``numpy.random``; ``seed`` is a non-negative int."""
