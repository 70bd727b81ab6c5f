//! PyO3 glue for netsteer-core: argument conversion and error mapping only.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadwriteArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt};
use std::sync::atomic::{AtomicUsize, Ordering};

use netsteer_core::engine::{FlowBatch, RunStatus};
use netsteer_core::mpi::{check_steps, step_totals, Algo, Collective, JobChoices, JobSpec, Step};
use netsteer_core::packet::{PacketConfig, Packets};
use netsteer_core::rng::{entropy_words, Pcg64};
use netsteer_core::route::{PgftDmodk, TableRouter};
use netsteer_core::sharing;
use netsteer_core::solver::{solve, Problem};

fn err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn csr<'a>(offsets: &'a [i64], items: &'a [i64], i: usize) -> PyResult<&'a [i64]> {
    // rows of a CSR pair given from Python, checked before use
    let (a, b) = (offsets[i], offsets[i + 1]);
    if a < 0 || b < a || b as usize > items.len() {
        return Err(err(format!("offsets are not monotone at row {i}")));
    }
    Ok(&items[a as usize..b as usize])
}

fn to_u32(xs: &[i64], what: &str) -> PyResult<Vec<u32>> {
    xs.iter()
        .map(|&x| u32::try_from(x).map_err(|_| err(format!("{what} {x} out of range"))))
        .collect()
}

/// The simulation engine (see netsteer.sim for the Python front): flow level, or
/// packet level when given ``packet`` parameters.
#[pyclass(module = "netsteer._core")]
struct Engine {
    inner: netsteer_core::Engine,
    // engine ticks per ns: the engine runs a network `tick` times slower and longer
    // (the same schedule on a finer clock); times cross this API in ns
    tick: i64,
}

impl Engine {
    fn to_ticks(&self, ns: i64) -> i64 {
        ns.saturating_mul(self.tick)
    }
    /// A time back in ns, rounded up as the engine rounds finishes (-1 stays -1).
    fn to_ns(&self, t: i64) -> i64 {
        if t <= 0 || self.tick == 1 {
            t
        } else {
            t / self.tick + i64::from(t % self.tick != 0)
        }
    }
}

#[pymethods]
impl Engine {
    /// ``packet``: run at packet level with these parameters (a dict with any of
    /// ``mtu``, ``header``, ``buffer``, ``vls``, ``switch_latency_ns``,
    /// ``cut_through``, ``vlarb_high``, ``vlarb_low`` (lists of ``(vl, weight)``),
    /// ``high_limit``, ``sl2vl`` (16 VLs)); ``sharing`` is then not used.
    ///
    /// ``ticks_per_ns``: the flow engine's clock runs in 1/``ticks_per_ns`` ns (it
    /// simulates the network that many times slower and longer); every time given
    /// or returned is still in ns, rounded up. 1 (the default) is the ns clock.
    #[new]
    #[pyo3(signature = (capacity, latency_ns, sharing="maxmin", tcp_gamma=None, packet=None, ticks_per_ns=1))]
    fn new(
        capacity: PyReadonlyArray1<f64>,
        latency_ns: PyReadonlyArray1<i64>,
        sharing: &str,
        tcp_gamma: Option<f64>,
        packet: Option<Bound<'_, PyDict>>,
        ticks_per_ns: i64,
    ) -> PyResult<Self> {
        if !(1..=1000).contains(&ticks_per_ns) {
            return Err(err(format!(
                "ticks_per_ns must be 1 to 1000, not {ticks_per_ns}"
            )));
        }
        if ticks_per_ns > 1 && packet.is_some() {
            return Err(err(
                "the packet fidelity runs on its own clock: ticks_per_ns must be 1",
            ));
        }
        let tick = ticks_per_ns;
        let cap: Vec<f64> = capacity
            .as_slice()?
            .iter()
            .map(|&c| c / tick as f64)
            .collect();
        let lat: Vec<i64> = latency_ns
            .as_slice()?
            .iter()
            .map(|&l| l.saturating_mul(tick))
            .collect();
        if cap.len() != lat.len() {
            return Err(err("capacity and latency_ns differ in length"));
        }
        let mut inner = if let Some(d) = packet {
            let cfg = packet_config(&d)?;
            let phys = Packets::new(cap.len(), cfg)
                .map_err(|(field, reason)| err(format!("packet.{field}: {reason}")))?;
            netsteer_core::Engine::with_physics(cap, lat, Box::new(phys))
        } else {
            let model = sharing::by_name_on_clock(sharing, tcp_gamma, tick).ok_or_else(|| {
                err(format!(
                    "unknown sharing model {sharing:?}; use maxmin or cm02"
                ))
            })?;
            netsteer_core::Engine::new(cap, lat, model)
        };
        inner.set_sample_limit(SAMPLE_LIMIT.load(Ordering::Relaxed));
        Ok(Engine { inner, tick })
    }

    /// Add flows given as columns; returns the id of the first.
    #[allow(clippy::too_many_arguments)]
    fn add_flows(
        &mut self,
        bytes: PyReadonlyArray1<f64>,
        path_offsets: PyReadonlyArray1<i64>,
        path_channels: PyReadonlyArray1<i64>,
        start_ns: PyReadonlyArray1<i64>,
        delay_ns: PyReadonlyArray1<i64>,
        weight: PyReadonlyArray1<f64>,
        priority: PyReadonlyArray1<i64>,
        dep_offsets: PyReadonlyArray1<i64>,
        deps: PyReadonlyArray1<i64>,
    ) -> PyResult<usize> {
        let bytes = bytes.as_slice()?;
        let n = bytes.len();
        let to_usize = |xs: &[i64], what: &str| -> PyResult<Vec<usize>> {
            xs.iter()
                .map(|&x| usize::try_from(x).map_err(|_| err(format!("{what} {x} out of range"))))
                .collect()
        };
        let path_offsets = to_usize(path_offsets.as_slice()?, "path offset")?;
        let dep_offsets = to_usize(dep_offsets.as_slice()?, "dependency offset")?;
        let paths = to_u32(path_channels.as_slice()?, "channel")?;
        let deps = to_u32(deps.as_slice()?, "dependency")?;
        let priority: Vec<u8> = priority
            .as_slice()?
            .iter()
            .map(|&p| u8::try_from(p).map_err(|_| err(format!("priority {p} out of 0..255"))))
            .collect::<PyResult<_>>()?;
        if path_offsets.len() != n + 1 || dep_offsets.len() != n + 1 {
            return Err(err("offsets must have one more entry than flows"));
        }
        let start: Vec<i64> = start_ns
            .as_slice()?
            .iter()
            .map(|&t| self.to_ticks(t))
            .collect();
        let delay: Vec<i64> = delay_ns
            .as_slice()?
            .iter()
            .map(|&t| self.to_ticks(t))
            .collect();
        self.inner
            .add_batch(&FlowBatch {
                bytes,
                path_offsets: &path_offsets,
                paths: &paths,
                start: &start,
                delay: &delay,
                weight: weight.as_slice()?,
                priority: &priority,
                dep_offsets: &dep_offsets,
                deps: &deps,
            })
            .map_err(err)
    }

    /// Run until ``until_ns`` (None: to the end) or ``max_events``; returns
    /// "done", "until", "budget" or "stalled".
    #[pyo3(signature = (until_ns=None, max_events=None))]
    fn run(
        &mut self,
        py: Python<'_>,
        until_ns: Option<i64>,
        max_events: Option<u64>,
    ) -> PyResult<&'static str> {
        let until = until_ns.map_or(i64::MAX, |t| self.to_ticks(t));
        let budget = max_events.unwrap_or(u64::MAX);
        let inner = &mut self.inner;
        let status = py.detach(|| inner.run(until, budget));
        if inner.sample_overflow() {
            return Err(sample_overflow(inner));
        }
        if let Some(e) = inner.stream().and_then(|s| s.error()) {
            return Err(err(format!("MPI stream stopped: {e}")));
        }
        Ok(match status {
            RunStatus::Done => "done",
            RunStatus::Until => "until",
            RunStatus::Budget => "budget",
            RunStatus::Stalled => "stalled",
        })
    }

    /// Route streamed MPI messages by destination tables (``Routing``'s compact
    /// rows and ECMP groups; the arguments of ``walk_tables`` without the flows).
    #[allow(clippy::too_many_arguments)]
    fn set_router_tables(
        &mut self,
        table: PyReadonlyArray2<i32>,
        row_of: PyReadonlyArray1<i64>,
        host_port: PyReadonlyArray1<i64>,
        out_channel: PyReadonlyArray2<i64>,
        channel_dst: PyReadonlyArray1<i64>,
        is_host: PyReadonlyArray1<bool>,
        give_up: PyReadonlyArray1<bool>,
        host_nodes: PyReadonlyArray1<i64>,
        groups: (PyReadonlyArray1<i64>, PyReadonlyArray1<i32>, &str),
    ) -> PyResult<()> {
        let n_hosts = table.shape()[1];
        let n_slots = out_channel.shape()[1];
        self.check_channels(channel_dst.len())?;
        let (gptr, gports) = (groups.0.as_slice()?.to_vec(), groups.1.as_slice()?.to_vec());
        let hash = ecmp_hash(groups.2)?;
        let r = TableRouter::new(
            table.as_slice()?.to_vec(),
            row_of.as_slice()?.to_vec(),
            n_hosts,
            host_port.as_slice()?.to_vec(),
            out_channel.as_slice()?.to_vec(),
            n_slots,
            channel_dst.as_slice()?.to_vec(),
            is_host.as_slice()?.to_vec(),
            give_up.as_slice()?.to_vec(),
            host_nodes.as_slice()?.to_vec(),
        )
        .and_then(|r| r.with_groups(gptr, gports, hash))
        .map_err(err)?;
        self.inner.set_router(Box::new(r));
        Ok(())
    }

    /// Route streamed MPI messages by D-mod-K on a PGFT, computed per hop (no tables).
    #[allow(clippy::too_many_arguments)]
    fn set_router_pgft(
        &mut self,
        levels: usize,
        down: Vec<u64>,
        up: Vec<u64>,
        parallel: Vec<u64>,
        labels: PyReadonlyArray2<i64>,
        level: PyReadonlyArray1<i64>,
        out_channel: PyReadonlyArray2<i64>,
        channel_dst: PyReadonlyArray1<i64>,
    ) -> PyResult<()> {
        self.check_channels(channel_dst.len())?;
        let labels: Vec<u32> = labels
            .as_slice()?
            .iter()
            .map(|&x| u32::try_from(x).map_err(|_| err(format!("label digit {x} out of range"))))
            .collect::<PyResult<_>>()?;
        let level: Vec<u8> = level
            .as_slice()?
            .iter()
            .map(|&x| u8::try_from(x).map_err(|_| err(format!("level {x} out of range"))))
            .collect::<PyResult<_>>()?;
        let r = PgftDmodk::new(
            levels,
            down,
            up,
            parallel,
            labels,
            level,
            out_channel.as_slice()?.to_vec(),
            out_channel.shape()[1],
            channel_dst.as_slice()?.to_vec(),
        )
        .map_err(err)?;
        self.inner.set_router(Box::new(r));
        Ok(())
    }

    /// The streamed router's path from host ``src`` to host ``dst`` (for checks).
    fn route_path<'py>(
        &self,
        py: Python<'py>,
        src: usize,
        dst: usize,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let s = self.inner.stream().ok_or_else(|| err("no router set"))?;
        let mut out = vec![];
        s.router().path(src, dst, &mut out).map_err(err)?;
        Ok(out.into_pyarray(py))
    }

    /// Run an MPI job rank by rank (after ``set_router_*``); returns its index.
    ///
    /// ``steps``: tuples ``("collective", op, algorithm, bytes, root, elem_bytes)``,
    /// ``("compute", ns)`` or ``("send", src, dst, bytes)``. ``sl``: the service
    /// level its messages travel on (packet fidelity).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (hosts, steps, repeat=1, start_ns=0, priority=0, weight=1.0, envelope_bytes=0, sl=0))]
    fn add_mpi_job(
        &mut self,
        hosts: PyReadonlyArray1<i64>,
        steps: Vec<Bound<'_, PyAny>>,
        repeat: u32,
        start_ns: i64,
        priority: u8,
        weight: f64,
        envelope_bytes: u64,
        sl: u8,
    ) -> PyResult<usize> {
        let hosts = to_u32(hosts.as_slice()?, "host")?;
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, s)| parse_step(s).map_err(|e| err(format!("program step {i}: {e}"))))
            .map(|s| {
                s.map(|s| match s {
                    Step::Compute(ns) => Step::Compute(self.to_ticks(ns)),
                    other => other,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let spec = JobSpec {
            hosts,
            steps,
            repeat,
            start_ns: self.to_ticks(start_ns),
            priority,
            weight,
            sl,
            envelope: envelope_bytes,
        };
        self.inner.add_mpi_job(spec).map_err(err)
    }

    /// Streamed MPI work so far: messages and computes done, in flight, ranks.
    fn mpi_progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let p = self
            .inner
            .stream()
            .map(|s| s.progress())
            .unwrap_or_default();
        d.set_item("messages_done", p.messages_done)?;
        d.set_item("computes_done", p.computes_done)?;
        d.set_item("in_flight", p.in_flight)?;
        d.set_item("peak_in_flight", p.peak_in_flight)?;
        d.set_item("ranks", p.ranks)?;
        d.set_item("ranks_done", p.ranks_done)?;
        d.set_item("flow_slots", self.inner.streamed_slots())?;
        Ok(d)
    }

    /// Per executed step of every streamed job, as columns: ``job``, ``iteration``,
    /// ``step``, ``first_release_ns`` and ``last_done_ns`` (-1: never), ``flows``, and
    /// ``bytes`` (a list of Python ints: exact, envelopes included).
    fn mpi_spans<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let spans = self.inner.stream().map(|s| s.spans()).unwrap_or(&[]);
        let d = PyDict::new(py);
        let col = |f: &dyn Fn(&netsteer_core::mpi::Span) -> i64| -> Vec<i64> {
            spans.iter().map(f).collect()
        };
        d.set_item("job", col(&|s| s.job as i64).into_pyarray(py))?;
        d.set_item("iteration", col(&|s| s.iteration as i64).into_pyarray(py))?;
        d.set_item("step", col(&|s| s.step as i64).into_pyarray(py))?;
        d.set_item(
            "first_release_ns",
            col(&|s| {
                if s.first_release == i64::MAX {
                    -1
                } else {
                    self.to_ns(s.first_release)
                }
            })
            .into_pyarray(py),
        )?;
        d.set_item(
            "last_done_ns",
            col(&|s| self.to_ns(s.last_done)).into_pyarray(py),
        )?;
        d.set_item("flows", col(&|s| s.flows as i64).into_pyarray(py))?;
        // exact integers (Python ints): a step's bytes can pass 2^53 and u64
        let bytes: Vec<u128> = spans.iter().map(|s| s.bytes).collect();
        d.set_item("bytes", bytes)?;
        Ok(d)
    }

    /// Per streamed job: (completion_ns, ranks not done).
    fn mpi_jobs(&self) -> Vec<(i64, usize)> {
        self.inner
            .stream()
            .map(|s| {
                s.jobs()
                    .iter()
                    .map(|j| (self.to_ns(j.completion), j.ranks_left))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Per streamed job, its messages' latency and queueing (packet fidelity; None
    /// per job otherwise): ``messages``, ``latency_sum_ns``, ``latency_max_ns``,
    /// ``queued`` (messages with a time alone), ``queueing_sum_ns``, ``queueing_max_ns``.
    fn mpi_message_times<'py>(&self, py: Python<'py>) -> PyResult<Vec<Option<Bound<'py, PyDict>>>> {
        let Some(s) = self.inner.stream() else {
            return Ok(vec![]);
        };
        let packets = self.packets().is_some();
        s.jobs()
            .iter()
            .map(|j| {
                if !packets {
                    return Ok(None);
                }
                let t = j.times;
                let d = PyDict::new(py);
                d.set_item("messages", t.messages)?;
                d.set_item("latency_sum_ns", t.latency_sum)?;
                d.set_item("latency_max_ns", t.latency_max)?;
                d.set_item("queued", t.queued)?;
                d.set_item("queueing_sum_ns", t.queueing_sum)?;
                d.set_item("queueing_max_ns", t.queueing_max)?;
                Ok(Some(d))
            })
            .collect()
    }

    #[getter]
    fn now(&self) -> i64 {
        self.to_ns(self.inner.now())
    }
    #[getter]
    fn unfinished(&self) -> usize {
        self.inner.unfinished()
    }
    #[getter]
    fn n_flows(&self) -> usize {
        self.inner.n_flows()
    }
    #[getter]
    fn sharing(&self) -> &'static str {
        self.inner.model_name()
    }

    fn set_sample_interval(&mut self, interval_ns: i64) {
        let t = self.to_ticks(interval_ns);
        self.inner.set_sample_interval(t);
    }

    /// Hold at most ``samples`` counter samples: past them every other one is dropped
    /// and the interval doubles (``sample_interval: auto``), rather than stop at the
    /// memory limit.
    fn set_sample_cap(&mut self, samples: usize) {
        self.inner.set_sample_cap(samples);
    }

    /// The counter interval in force, ns (a sample cap may have doubled it).
    #[getter]
    fn sample_interval_ns(&self) -> i64 {
        self.to_ns(self.inner.sample_interval())
    }

    /// Events that fall due less than ``window_ns`` after an event happen with it
    /// (SimGrid's timing precision; 0 is exact).
    fn set_merge_window(&mut self, window_ns: i64) -> PyResult<()> {
        let t = self.to_ticks(window_ns);
        self.inner
            .set_merge_window(t)
            .map_err(|e| err(e.to_string()))
    }

    fn set_channels_up(&mut self, channels: PyReadonlyArray1<i64>, up: bool) -> PyResult<()> {
        let ch = self.channels(channels.as_slice()?)?;
        self.inner.set_channels_up(&ch, up);
        Ok(())
    }

    fn set_capacity(&mut self, channels: PyReadonlyArray1<i64>, capacity: f64) -> PyResult<()> {
        if !(capacity >= 0.0) {
            return Err(err("capacity must be non-negative"));
        }
        let ch = self.channels(channels.as_slice()?)?;
        self.inner.set_capacity(&ch, capacity / self.tick as f64);
        Ok(())
    }

    /// Give ``flows[i]`` the path ``channels[offsets[i]:offsets[i+1]]`` from now on.
    fn reroute(
        &mut self,
        flows: PyReadonlyArray1<i64>,
        offsets: PyReadonlyArray1<i64>,
        channels: PyReadonlyArray1<i64>,
    ) -> PyResult<()> {
        let (fs, of, ch) = (flows.as_slice()?, offsets.as_slice()?, channels.as_slice()?);
        if of.len() != fs.len() + 1 {
            return Err(err("offsets must have one more entry than flows"));
        }
        for (i, &f) in fs.iter().enumerate() {
            let path = to_u32(csr(of, ch, i)?, "channel")?;
            self.inner.reroute(f as usize, &path).map_err(err)?;
        }
        Ok(())
    }

    /// Mark flows as background: they end when every other flow is done.
    fn set_background(&mut self, flows: PyReadonlyArray1<i64>) -> PyResult<()> {
        let fs = to_u32(flows.as_slice()?, "flow")?;
        self.inner.set_background(&fs).map_err(err)
    }

    /// End these flows now (iperf-like flows reaching their stop time).
    fn stop_flows(&mut self, flows: PyReadonlyArray1<i64>) -> PyResult<()> {
        let fs = to_u32(flows.as_slice()?, "flow")?;
        self.inner.stop_flows(&fs).map_err(err)
    }

    fn completion_ns<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        (0..self.inner.n_flows())
            .map(|f| self.to_ns(self.inner.completion(f)))
            .collect::<Vec<_>>()
            .into_pyarray(py)
    }
    fn release_ns<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        (0..self.inner.n_flows())
            .map(|f| self.to_ns(self.inner.release_time(f)))
            .collect::<Vec<_>>()
            .into_pyarray(py)
    }
    fn rates<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        (0..self.inner.n_flows())
            .map(|f| self.inner.rate(f) * self.tick as f64)
            .collect::<Vec<_>>()
            .into_pyarray(py)
    }
    /// Bytes each flow has sent up to now (per-flow counters, as OpenFlow rules count).
    fn sent_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        (0..self.inner.n_flows())
            .map(|f| self.inner.sent(f))
            .collect::<Vec<_>>()
            .into_pyarray(py)
    }
    fn unfinished_flows<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        self.inner.unfinished_flows().into_pyarray(py)
    }
    fn flows_on<'py>(
        &self,
        py: Python<'py>,
        channels: PyReadonlyArray1<i64>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let ch = self.channels(channels.as_slice()?)?;
        Ok(self.inner.flows_on(&ch).into_pyarray(py))
    }
    fn flow_path<'py>(&self, py: Python<'py>, flow: usize) -> PyResult<Bound<'py, PyArray1<u32>>> {
        if flow >= self.inner.n_flows() {
            return Err(err(format!("flow {flow} does not exist")));
        }
        Ok(self.inner.flow_path(flow).to_vec().into_pyarray(py))
    }
    /// The service level flow ``flow`` travels on now (packet fidelity).
    fn flow_sl(&self, flow: usize) -> PyResult<u8> {
        if flow >= self.inner.n_flows() {
            return Err(err(format!("flow {flow} does not exist")));
        }
        Ok(self.inner.flow(flow).sl)
    }
    fn channel_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.channel_bytes().into_pyarray(py)
    }
    /// (times_ns [k], cumulative bytes [k, n_channels]).
    fn samples<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray2<f64>>)> {
        let (t, b) = self.inner.samples();
        let n = self.inner.n_channels();
        let rows: Vec<Vec<f64>> = if n == 0 {
            vec![vec![]; t.len()]
        } else {
            b.chunks(n).map(|r| r.to_vec()).collect()
        };
        let arr = if rows.is_empty() {
            numpy::PyArray2::zeros(py, [0, n], false)
        } else {
            PyArray2::from_vec2(py, &rows).map_err(err)?
        };
        let t: Vec<i64> = t.iter().map(|&x| self.to_ns(x)).collect();
        Ok((t.into_pyarray(py), arr))
    }
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("events", s.events)?;
        d.set_item("sample_events", s.sample_events)?;
        d.set_item("solves", s.solves)?;
        d.set_item("solved_flows", s.solved_flows)?;
        d.set_item("solved_flow_hops", s.solved_flow_hops)?;
        d.set_item("kept_flows", s.kept_flows)?;
        if self.packets().is_some() {
            d.set_item("packet_hops", s.packet_hops)?;
        }
        Ok(d)
    }

    /// "flow" or "packet".
    #[getter]
    fn fidelity(&self) -> &'static str {
        if self.packets().is_some() {
            "packet"
        } else {
            "flow"
        }
    }

    /// Give ``flows`` the service levels ``sl`` (packet fidelity: SL2VL picks the VL).
    fn set_sl(&mut self, flows: PyReadonlyArray1<i64>, sl: PyReadonlyArray1<i64>) -> PyResult<()> {
        let fs = to_u32(flows.as_slice()?, "flow")?;
        let sl: Vec<u8> = sl
            .as_slice()?
            .iter()
            .map(|&x| {
                u8::try_from(x)
                    .ok()
                    .filter(|&x| x < 16)
                    .ok_or_else(|| err(format!("SL {x} out of 0..15")))
            })
            .collect::<PyResult<_>>()?;
        if fs.len() != sl.len() {
            return Err(err("flows and sl differ in length"));
        }
        self.inner.set_sl(&fs, &sl).map_err(err)
    }

    /// Give ``flows`` the strict-priority classes ``priority`` and weights ``weight``
    /// in place (flow fidelity: QoS). A flow keeps its id, bytes sent, release,
    /// latency paid and dependents; an active one's rate is re-solved now. Flows
    /// already at those values, and finished ones, are left untouched.
    fn set_priority_weight(
        &mut self,
        flows: PyReadonlyArray1<i64>,
        priority: PyReadonlyArray1<i64>,
        weight: PyReadonlyArray1<f64>,
    ) -> PyResult<()> {
        let fs = to_u32(flows.as_slice()?, "flow")?;
        let priority: Vec<u8> = priority
            .as_slice()?
            .iter()
            .map(|&p| u8::try_from(p).map_err(|_| err(format!("priority {p} out of 0..255"))))
            .collect::<PyResult<_>>()?;
        self.inner
            .set_priority_weight(&fs, &priority, weight.as_slice()?)
            .map_err(err)
    }

    /// Entries of the engine's path arena (for tests of re-routing).
    fn path_arena_len(&self) -> usize {
        self.inner.path_arena_len()
    }

    /// The packet fabric's own measurements (packet fidelity; None otherwise):
    /// ``vls``; per channel and VL, shape [channels, vls]: ``xmit_wait_ns``
    /// (PortXmitWait: time with a packet but no credits), ``peak_occupancy_bytes``,
    /// ``xmit_bytes``; ``occupancy_bytes`` [samples, channels, vls] at the counter
    /// sample times; per flow ``start_ns`` (first packet may leave), ``ideal_ns``
    /// (its time alone on an idle fabric); ``packets`` (retransmissions included);
    /// ``xmit_discards`` [channels, vls] (packets dropped there, the link down);
    /// per run ``dropped``, ``retransmitted``, ``timeouts`` (retransmission timeouts
    /// that fired), ``naks`` (NAKs that sent a flow back), ``discarded`` (packets destinations threw away: duplicates,
    /// or behind a lost one) and ``stopped_discards`` (packets of flows stopped by their duration, thrown away in
    /// the network after the stop); per flow ``dropped_per_flow`` and
    /// ``retransmitted_per_flow``.
    fn packet_report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(p) = self.packets() else {
            return Ok(None);
        };
        let (nc, nv) = (self.inner.n_channels(), p.vls());
        let d = PyDict::new(py);
        let grid = |v: Vec<f64>| -> PyResult<Bound<'py, PyArray2<f64>>> {
            let rows: Vec<Vec<f64>> = if nv == 0 {
                vec![]
            } else {
                v.chunks(nv).map(|r| r.to_vec()).collect()
            };
            if rows.is_empty() {
                Ok(PyArray2::zeros(py, [0, nv], false))
            } else {
                PyArray2::from_vec2(py, &rows).map_err(err)
            }
        };
        d.set_item("vls", nv)?;
        d.set_item(
            "xmit_wait_ns",
            grid(p.xmit_wait_ps().iter().map(|&x| x as f64 * 1e-3).collect())?,
        )?;
        d.set_item(
            "peak_occupancy_bytes",
            grid(p.peak_occupancy().iter().map(|&x| x as f64).collect())?,
        )?;
        d.set_item("xmit_bytes", grid(p.vl_bytes().to_vec())?)?;
        let occ = p.occupancy_samples();
        let k = nc * nv;
        let n_s = if k == 0 { 0 } else { occ.len() / k };
        let arr = numpy::PyArray1::from_vec(py, occ.iter().map(|&x| x as f64).collect::<Vec<_>>());
        d.set_item("occupancy_bytes", arr.reshape([n_s, nc, nv])?)?;
        let (start, _, ideal) = p.message_times(self.inner.n_flows());
        let ns = |v: Vec<i64>| -> Vec<i64> {
            v.into_iter()
                .map(|x| if x < 0 { -1 } else { (x + 999) / 1000 })
                .collect()
        };
        d.set_item("start_ns", ns(start).into_pyarray(py))?;
        d.set_item(
            "ideal_ns",
            ideal
                .into_iter()
                .map(|x| if x < 0 { -1 } else { (x + 999) / 1000 })
                .collect::<Vec<i64>>()
                .into_pyarray(py),
        )?;
        d.set_item("packets", p.packets())?;
        d.set_item(
            "xmit_discards",
            grid(p.xmit_discards().iter().map(|&x| x as f64).collect())?,
        )?;
        d.set_item("dropped", p.dropped())?;
        d.set_item("retransmitted", p.retransmitted())?;
        d.set_item("timeouts", p.timeouts())?;
        d.set_item("naks", p.naks())?;
        d.set_item("discarded", p.discarded())?;
        d.set_item("stopped_discards", p.stopped_discards())?;
        let (lost, resent) = p.flow_losses(self.inner.n_flows());
        d.set_item("dropped_per_flow", lost.into_pyarray(py))?;
        d.set_item("retransmitted_per_flow", resent.into_pyarray(py))?;
        Ok(Some(d))
    }
}

fn parse_step(s: &Bound<'_, PyAny>) -> PyResult<Step> {
    let kind: String = s.get_item(0)?.extract()?;
    Ok(match kind.as_str() {
        "collective" => {
            // the job's reduce and bcast come last (see JobChoices)
            let (_, op, algo, bytes, root, elem, reduce, bcast): (
                String,
                String,
                String,
                u64,
                usize,
                u64,
                String,
                String,
            ) = s.extract()?;
            let named = |op: &str, algo: &str| {
                Algo::by_name(op, algo)
                    .ok_or_else(|| err(format!("unknown collective {op}/{algo}")))
            };
            Step::Collective(Collective {
                algo: named(&op, &algo)?,
                bytes,
                root,
                elem_bytes: elem,
                job: JobChoices {
                    reduce: named("reduce", &reduce)?,
                    bcast: named("bcast", &bcast)?,
                },
            })
        }
        "compute" => {
            let (_, ns): (String, i64) = s.extract()?;
            Step::Compute(ns)
        }
        "send" => {
            let (_, src, dst, bytes): (String, usize, usize, u64) = s.extract()?;
            Step::Send { src, dst, bytes }
        }
        other => return Err(err(format!("unknown step kind {other:?}"))),
    })
}

fn packet_config(d: &Bound<'_, PyDict>) -> PyResult<PacketConfig> {
    let mut c = PacketConfig::default();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        let bad = |e: PyErr| err(format!("packet.{key}: {e}"));
        match key.as_str() {
            "mtu" => c.mtu = v.extract().map_err(bad)?,
            "header" => c.header = v.extract().map_err(bad)?,
            "buffer" => c.buffer = v.extract().map_err(bad)?,
            "vls" => c.vls = v.extract().map_err(bad)?,
            "switch_latency_ns" => c.switch_latency = v.extract().map_err(bad)?,
            "cut_through" => c.cut_through = v.extract().map_err(bad)?,
            "vlarb_high" => c.vlarb_high = v.extract().map_err(bad)?,
            "vlarb_low" => c.vlarb_low = v.extract().map_err(bad)?,
            "high_limit" => c.high_limit = v.extract().map_err(bad)?,
            "rc_timeout_ns" => c.rc_timeout = v.extract().map_err(bad)?,
            "sl2vl" => {
                let m: Vec<u8> = v.extract().map_err(bad)?;
                if m.len() != 16 {
                    return Err(err(format!(
                        "packet.sl2vl: {} entries, one VL per SL (16) is needed",
                        m.len()
                    )));
                }
                c.sl2vl.copy_from_slice(&m);
            }
            other => return Err(err(format!("packet: unknown parameter {other:?}"))),
        }
    }
    Ok(c)
}

impl Engine {
    fn packets(&self) -> Option<&Packets> {
        self.inner.physics().as_any().downcast_ref::<Packets>()
    }

    fn check_channels(&self, n: usize) -> PyResult<()> {
        if n != self.inner.n_channels() {
            return Err(err(format!(
                "the router knows {n} channels, the engine {}",
                self.inner.n_channels()
            )));
        }
        Ok(())
    }

    fn channels(&self, xs: &[i64]) -> PyResult<Vec<u32>> {
        let n = self.inner.n_channels() as i64;
        xs.iter()
            .map(|&c| {
                if (0..n).contains(&c) {
                    Ok(c as u32)
                } else {
                    Err(err(format!("channel {c} does not exist")))
                }
            })
            .collect()
    }
}

/// One weighted max-min solve, for tests and benchmarks: returns the rates.
#[pyfunction]
#[pyo3(signature = (capacity, offsets, channels, weight, bound=None, priority=None))]
fn maxmin<'py>(
    py: Python<'py>,
    capacity: PyReadonlyArray1<f64>,
    offsets: PyReadonlyArray1<i64>,
    channels: PyReadonlyArray1<i64>,
    weight: PyReadonlyArray1<f64>,
    bound: Option<PyReadonlyArray1<f64>>,
    priority: Option<PyReadonlyArray1<i64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let cap = capacity.as_slice()?;
    let w = weight.as_slice()?;
    let n = w.len();
    let offs: Vec<usize> = offsets.as_slice()?.iter().map(|&x| x as usize).collect();
    if offs.len() != n + 1 {
        return Err(err("offsets must have one more entry than weight"));
    }
    let ch = to_u32(channels.as_slice()?, "channel")?;
    if ch.iter().any(|&c| c as usize >= cap.len())
        || offs.windows(2).any(|p| p[0] > p[1])
        || offs[n] > ch.len()
    {
        return Err(err(
            "paths name channels that do not exist or offsets are not monotone",
        ));
    }
    let b: Vec<f64> = match bound {
        Some(b) => b.as_slice()?.to_vec(),
        None => vec![f64::INFINITY; n],
    };
    let p: Vec<u8> = match priority {
        Some(p) => p
            .as_slice()?
            .iter()
            .map(|&x| x.clamp(0, 255) as u8)
            .collect(),
        None => vec![0; n],
    };
    let rates = py.detach(|| {
        solve(&Problem {
            capacity: cap,
            offsets: &offs,
            channels: &ch,
            weight: w,
            bound: &b,
            priority: &p,
        })
    });
    Ok(rates.into_pyarray(py))
}

/// Walk destination tables into CSR paths, ECMP ``groups`` (CSR pointers, ports,
/// hash name) resolved by ``netsteer.routing.table.flow_hash`` of ``src_hosts`` and
/// ``flow_ids``; None when the fast walk cannot (missing entry or group, circuit,
/// loop): the caller then takes the general walk, which words the error.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn walk_tables<'py>(
    py: Python<'py>,
    table: PyReadonlyArray2<i32>,
    row_of: PyReadonlyArray1<i64>,
    host_port: PyReadonlyArray1<i64>,
    out_channel: PyReadonlyArray2<i64>,
    channel_dst: PyReadonlyArray1<i64>,
    is_host: PyReadonlyArray1<bool>,
    give_up: PyReadonlyArray1<bool>,
    src_nodes: PyReadonlyArray1<i64>,
    dst_hosts: PyReadonlyArray1<i64>,
    dst_nodes: PyReadonlyArray1<i64>,
    limit: usize,
    groups: (PyReadonlyArray1<i64>, PyReadonlyArray1<i32>, &str),
    src_hosts: PyReadonlyArray1<i64>,
    flow_ids: PyReadonlyArray1<i64>,
) -> PyResult<Option<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i32>>)>> {
    let (n_rows, n_hosts) = (table.shape()[0], table.shape()[1]);
    let (n_nodes, n_slots) = (out_channel.shape()[0], out_channel.shape()[1]);
    let rows = row_of.as_slice()?;
    let ok_shapes = rows.len() == n_nodes
        && rows.iter().all(|&r| (-1..n_rows as i64).contains(&r))
        && host_port.len() == n_nodes
        && is_host.len() == n_nodes
        && give_up.len() == n_nodes;
    if !ok_shapes {
        return Err(err(
            "tables and topology differ in their node count, or row_of names a missing row",
        ));
    }
    let (src, dst, dn) = (
        src_nodes.as_slice()?,
        dst_hosts.as_slice()?,
        dst_nodes.as_slice()?,
    );
    let cd = channel_dst.as_slice()?;
    let n_channels = cd.len() as i64;
    let bad_node = |x: &i64| !(0..n_nodes as i64).contains(x);
    let (sh, ids) = (src_hosts.as_slice()?, flow_ids.as_slice()?);
    let (gptr, gports) = (groups.0.as_slice()?, groups.1.as_slice()?);
    let hash = ecmp_hash(groups.2)?;
    if src.len() != dst.len()
        || src.len() != dn.len()
        || src.len() != sh.len()
        || src.len() != ids.len()
        || src.iter().any(bad_node)
        || dn.iter().any(bad_node)
        || dst.iter().any(|&d| !(0..n_hosts as i64).contains(&d))
        || cd.iter().any(bad_node)
        || out_channel.as_slice()?.iter().any(|&c| c >= n_channels)
    {
        return Err(err(
            "flows or tables name nodes, hosts or channels that do not exist",
        ));
    }
    let t = netsteer_core::paths::Tables {
        table: table.as_slice()?,
        row_of: rows,
        n_hosts,
        host_port: host_port.as_slice()?,
        out_channel: out_channel.as_slice()?,
        n_slots,
        channel_dst: cd,
        is_host: is_host.as_slice()?,
        give_up: give_up.as_slice()?,
        limit,
        groups: netsteer_core::paths::Groups {
            ptr: gptr,
            ports: gports,
            hash,
        },
    };
    let flows = netsteer_core::paths::Walks {
        src_node: src,
        src: sh,
        dst,
        dst_node: dn,
        id: ids,
    };
    let walked = py.detach(|| netsteer_core::paths::walk(&t, &flows));
    Ok(walked.ok().map(|(off, ch)| {
        let off: Vec<i64> = off.into_iter().map(|x| x as i64).collect();
        let ch: Vec<i32> = ch.into_iter().map(|x| x as i32).collect();
        (off.into_pyarray(py), ch.into_pyarray(py))
    }))
}

/// The ECMP hash named as in ``netsteer.routing.table.HASHES``.
fn ecmp_hash(name: &str) -> PyResult<netsteer_core::paths::EcmpHash> {
    use netsteer_core::paths::EcmpHash;
    match name {
        "dst" => Ok(EcmpHash::Dst),
        "src-dst" => Ok(EcmpHash::SrcDst),
        "flow" => Ok(EcmpHash::Flow),
        _ => Err(err(format!("unknown ECMP hash {name:?}"))),
    }
}

/// Balance the group entries of ``rows`` of a min-hop ``table`` in place by
/// per-row port counters (``netsteer_core::balance::least_used_rows``).
#[pyfunction]
fn least_used_rows(
    py: Python<'_>,
    mut table: PyReadwriteArray2<i32>,
    rows: PyReadonlyArray1<i64>,
    start: PyReadonlyArray1<i64>,
    ports: PyReadonlyArray1<i32>,
    n_slots: usize,
) -> PyResult<()> {
    let width = table.shape()[1];
    let to_usize = |v: &[i64]| -> PyResult<Vec<usize>> {
        v.iter()
            .map(|&x| usize::try_from(x).map_err(|_| err("a row or group start is negative")))
            .collect()
    };
    let rows = to_usize(rows.as_slice()?)?;
    let start = to_usize(start.as_slice()?)?;
    let ports = ports.as_slice()?.to_vec();
    let t = table.as_slice_mut()?;
    py.detach(|| netsteer_core::balance::least_used_rows(t, width, &rows, &start, &ports, n_slots))
        .map_err(err)
}

/// ``numpy.random.default_rng(seed).permutation(n)`` as a list, bit for bit,
/// without importing numpy.random (netsteer.traffic.placement.random).
#[pyfunction]
fn permutation(py: Python<'_>, seed: &Bound<'_, PyInt>, n: usize) -> PyResult<Vec<u64>> {
    let words = match seed.extract::<u64>() {
        Ok(s) => entropy_words(&s.to_le_bytes()),
        Err(_) if seed.lt(0)? => {
            // numpy's own words, so callers see the error they saw from numpy
            return Err(PyValueError::new_err("expected non-negative integer"));
        }
        Err(_) => {
            // past 64 bits: numpy splits the integer into 32-bit words, low first
            let nbytes = seed
                .call_method0("bit_length")?
                .extract::<usize>()?
                .div_ceil(8);
            let bytes = seed.call_method1("to_bytes", (nbytes, "little"))?;
            entropy_words(bytes.cast::<PyBytes>()?.as_bytes())
        }
    };
    py.detach(|| Pcg64::from_seed_sequence(&words).permutation(n))
        .map_err(|_| PyMemoryError::new_err(format!("no memory for a permutation of {n} items")))
}

/// Sample values (samples x channels) an engine made from now on may hold.
static SAMPLE_LIMIT: AtomicUsize = AtomicUsize::new(1 << 27);

/// Cap the counter samples of engines created from now on (values: samples x channels);
/// a run that would sample past it raises ``MemoryError``.
/// Refuse the program (``steps`` as ``Engine.add_mpi_job`` takes them) that a
/// ``ranks``-rank job cannot run, as ``add_mpi_job`` would: ``ValueError("program
/// step i: reason")``. Lets a scenario refuse it before the run, naming its file.
#[pyfunction]
fn check_mpi_steps(ranks: usize, steps: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, s)| parse_step(s).map_err(|e| err(format!("program step {i}: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    check_steps(ranks, &steps).map_err(err)
}

/// Per step of a ``ranks``-rank program (checked as ``check_mpi_steps`` checks it):
/// ``(flows, bytes)`` one execution makes, as the flow DAG holds them (a compute step
/// is one delay flow per rank; bytes exact, each message with ``envelope_bytes``).
#[pyfunction]
fn mpi_step_totals(
    ranks: usize,
    steps: Vec<Bound<'_, PyAny>>,
    envelope_bytes: u64,
) -> PyResult<Vec<(u64, u128)>> {
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, s)| parse_step(s).map_err(|e| err(format!("program step {i}: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    check_steps(ranks, &steps).map_err(err)?;
    Ok(steps
        .iter()
        .map(|s| step_totals(ranks, s, envelope_bytes))
        .collect())
}

#[pyfunction]
fn set_sample_limit(values: usize) {
    SAMPLE_LIMIT.store(values, Ordering::Relaxed);
}

fn sample_overflow(inner: &netsteer_core::Engine) -> PyErr {
    let (times, _) = inner.samples();
    PyMemoryError::new_err(format!(
        "the port counters reached the limit of {} values ({} samples of {} channels) before the run ended; \
         use a longer sample_interval, or raise --max-memory or NETSTEER_MAX_MEMORY",
        SAMPLE_LIMIT.load(Ordering::Relaxed),
        times.len(),
        inner.n_channels()
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(set_sample_limit, m)?)?;
    m.add_function(wrap_pyfunction!(check_mpi_steps, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_step_totals, m)?)?;
    m.add_function(wrap_pyfunction!(maxmin, m)?)?;
    m.add_function(wrap_pyfunction!(walk_tables, m)?)?;
    m.add_function(wrap_pyfunction!(least_used_rows, m)?)?;
    m.add_function(wrap_pyfunction!(permutation, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
