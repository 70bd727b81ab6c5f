//! The event-driven engine, shared by every fidelity.
//!
//! Time is integer nanoseconds and every ordering is total, so a run is
//! deterministic. A flow is *released* at its start time, or when the flows it
//! depends on have finished; it then waits its extra delay (which is how compute
//! phases enter a DAG), plus its path latency where the physics pays latency up
//! front, and becomes *active*: from then on its [`Physics`] moves its bytes.
//!
//! The split: this engine owns flow and dependency intake, release, the streamed
//! MPI jobs, background traffic, the network's state and its reconfiguration
//! (channels down or up, capacities, re-routing flows in flight), counter sampling
//! and the clock. The physics ([`crate::fluid::Fluid`]: rates from a sharing model;
//! [`crate::packet::Packets`]: packets, credits, virtual lanes) owns only how an
//! active flow's bytes cross the network and when its last byte arrives. Both
//! fidelities therefore take the same flows, paths and changes and produce the
//! same results; they differ only where the physics differs.
//!
//! The network may change between events: channels go down (capacity 0, their flows
//! stall) or come back, capacities change, and flows in flight are re-routed.

use std::collections::BTreeMap;

use crate::fluid::Fluid;
use crate::mpi::{JobSpec, Stream};
use crate::physics::{FlowCore, Net, Physics};
use crate::queue::EventQueue;
use crate::route::Router;
use crate::sharing::SharingModel;
use crate::Ns;

#[derive(Debug, Clone, PartialEq)]
pub enum EngineError {
    UnknownChannel {
        flow: usize,
        channel: u32,
    },
    UnknownFlow(usize),
    BadFlow {
        flow: usize,
        reason: String,
    },
    Cycle {
        flow: usize,
    },
    /// A setting the engine cannot take.
    Setting(String),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::UnknownChannel { flow, channel } => {
                write!(
                    f,
                    "flow {flow} crosses channel {channel}, which does not exist"
                )
            }
            EngineError::UnknownFlow(i) => write!(f, "flow {i} does not exist"),
            EngineError::BadFlow { flow, reason } => write!(f, "flow {flow}: {reason}"),
            EngineError::Setting(why) => f.write_str(why),
            EngineError::Cycle { flow } => {
                write!(
                    f,
                    "flow {flow} depends on itself through a cycle of dependencies"
                )
            }
        }
    }
}

impl std::error::Error for EngineError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowState {
    /// Waiting for its dependencies or its start time.
    Waiting,
    /// Paying latency and delay.
    Latency,
    /// Transferring bytes.
    Active,
    Done,
}

/// A flow as the workload gives it.
#[derive(Debug, Clone)]
pub struct FlowSpec {
    pub bytes: f64,
    pub path: Vec<u32>,
    /// Earliest release time; `None` means "when the dependencies are done" (or 0).
    pub start: Option<Ns>,
    /// Extra delay paid after release, before the transfer (compute, software overhead).
    pub delay: Ns,
    pub weight: f64,
    pub priority: u8,
    /// Flows that must finish before this one is released.
    pub deps: Vec<u32>,
}

impl FlowSpec {
    pub fn new(bytes: f64, path: Vec<u32>) -> Self {
        FlowSpec {
            bytes,
            path,
            start: None,
            delay: 0,
            weight: 1.0,
            priority: 0,
            deps: vec![],
        }
    }
}

/// Flows as columns: flow `i` crosses `paths[path_offsets[i]..path_offsets[i+1]]`
/// and waits for `deps[dep_offsets[i]..dep_offsets[i+1]]`; `start < 0` means none.
pub struct FlowBatch<'a> {
    pub bytes: &'a [f64],
    pub path_offsets: &'a [usize],
    pub paths: &'a [u32],
    pub start: &'a [Ns],
    pub delay: &'a [Ns],
    pub weight: &'a [f64],
    pub priority: &'a [u8],
    pub dep_offsets: &'a [usize],
    pub deps: &'a [u32],
}

/// What the engine keeps of a flow besides [`FlowCore`] (which the physics sees).
struct Meta {
    state: FlowState,
    deps_left: u32,
    start: Ns,
    delay: Ns,
    released_at: Ns,
    done_at: Ns,
    background: bool,
    // a streamed flow's slot is reused once its source has heard that it finished
    streamed: bool,
    // room for the path at path_start (a reused slot or a re-routed flow keeps it)
    path_cap: u32,
    // bytes sent, fixed when the flow is done
    sent: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Sample = 0,
    Release = 1,
    LatencyDone = 2,
}

/// An event; its time is its bucket's in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Event {
    kind: Kind,
    id: u32,
    version: u32,
}

/// Why [`Engine::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Every flow is done.
    Done,
    /// The clock reached `until`.
    Until,
    /// `max_events` events were handled; call again to go on.
    Budget,
    /// Nothing more can happen, but flows remain (stalled on channels that are down).
    Stalled,
}

/// Counters of the engine's own work, for reports and benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Events handled: flow releases, latencies and completions, and the physics'
    /// own events; not counter samples, so a run counts the same events whether it
    /// samples or not.
    pub events: u64,
    /// Counter samples handled (0 when the run does not sample).
    pub sample_events: u64,
    pub solves: u64,
    pub solved_flows: u64,
    pub solved_flow_hops: u64,
    /// Flows a solve reached and kept at their rate (the fluid physics' selective update;
    /// its tight form counts the kept flows whose bottleneck it checked).
    pub kept_flows: u64,
    /// Packets sent over one channel (packet fidelity).
    pub packet_hops: u64,
}

/// Builds a [`Net`] from the engine's fields, so the physics (another field) can be
/// borrowed mutably beside it.
macro_rules! net {
    ($s:expr) => {
        Net {
            flows: &$s.flows,
            paths: &$s.paths,
            capacity: &$s.capacity,
            base_capacity: &$s.base_capacity,
            latency: &$s.latency,
        }
    };
}

pub struct Engine {
    now: Ns,
    phys: Box<dyn Physics>,
    base_capacity: Vec<f64>,
    capacity: Vec<f64>,
    up: Vec<bool>,
    latency: Vec<Ns>,
    flows: Vec<FlowCore>,
    meta: Vec<Meta>,
    paths: Vec<u32>,
    // path rooms given up by re-routed flows, by size, for the next path that fits
    free_rooms: BTreeMap<u32, Vec<usize>>,
    // successors: a CSR range per flow into succ_pool, plus those added by later batches
    succ_start: Vec<u64>,
    succ_len: Vec<u32>,
    succ_pool: Vec<u32>,
    succ_extra: std::collections::HashMap<u32, Vec<u32>>,
    events: EventQueue<Event>,
    // events in the queue that are not counter samples: with none, and nothing in the
    // physics, a run with work left is stalled (samples alone would tick forever)
    pending_work: usize,
    unfinished: usize,
    // unfinished flows that are not background traffic
    foreground_left: usize,
    sample_interval: Ns,
    // most sample values (samples x channels) held; past it sampling stops
    sample_limit: usize,
    // most samples held before every other one is dropped and the interval doubles
    // (`sample_interval: auto`); usize::MAX: none, the limit stops sampling instead
    sample_cap: usize,
    sample_overflow: bool,
    sample_scheduled: bool,
    sample_times: Vec<Ns>,
    samples: Vec<f64>,
    stats: Stats,
    // flows the physics finished at this instant
    done_now: Vec<u32>,
    // streamed flows: slots free for reuse, finished ones the stream has not heard of
    free: Vec<u32>,
    done_log: Vec<u32>,
    stream: Option<Box<Stream>>,
    // the stream's unsent work counts as foreground until it is all sent
    stream_hold: bool,
    // what falls due less than this after an event happens with it (0: exact)
    merge_window: Ns,
}

impl Engine {
    /// A flow-level engine: channels with `capacity` (bytes per second) and
    /// `latency` (ns), rates from the sharing `model`.
    pub fn new(capacity: Vec<f64>, latency: Vec<Ns>, model: Box<dyn SharingModel>) -> Self {
        let n = capacity.len();
        Self::with_physics(capacity, latency, Box::new(Fluid::new(n, model)))
    }

    /// An engine whose active flows move by `phys` (for example
    /// [`crate::packet::Packets`], the packet-level fabric).
    pub fn with_physics(capacity: Vec<f64>, latency: Vec<Ns>, phys: Box<dyn Physics>) -> Self {
        let n = capacity.len();
        assert_eq!(n, latency.len(), "one latency per channel");
        Engine {
            now: 0,
            phys,
            base_capacity: capacity.clone(),
            capacity,
            up: vec![true; n],
            latency,
            flows: vec![],
            meta: vec![],
            paths: vec![],
            free_rooms: BTreeMap::new(),
            succ_start: vec![],
            succ_len: vec![],
            succ_pool: vec![],
            succ_extra: Default::default(),
            events: EventQueue::default(),
            pending_work: 0,
            unfinished: 0,
            foreground_left: 0,
            sample_interval: 0,
            sample_limit: usize::MAX,
            sample_cap: usize::MAX,
            sample_overflow: false,
            sample_scheduled: false,
            sample_times: vec![],
            samples: vec![],
            stats: Stats::default(),
            done_now: vec![],
            free: vec![],
            done_log: vec![],
            stream: None,
            stream_hold: false,
            merge_window: 0,
        }
    }

    /// Events that fall due less than `window` after an event happen with it: a
    /// flow finishing then is done (its last bytes' time is not waited for) and a
    /// flow whose latency ends then starts sending. SimGrid does this with its
    /// timing precision (`precision/timing`, 1e-9 s): one event takes every
    /// action within 1 ns of it. In contended runs each such ns is amplified, step
    /// by step, so reproducing SimGrid run for run needs the same rule, on a clock
    /// finer than the window (ticks of 0.1 ns, a window of 10 ticks). Counter
    /// samples neither trigger nor join a merge. 0 (the default) is exact.
    pub fn set_merge_window(&mut self, window: Ns) -> Result<(), EngineError> {
        if window < 0 {
            return Err(EngineError::Setting(format!(
                "the merge window is negative ({window})"
            )));
        }
        if window > 0 && !self.phys.can_merge() {
            return Err(EngineError::Setting(format!(
                "the {} physics has no merge window: its flows finish packet by packet",
                self.phys.name()
            )));
        }
        self.merge_window = window;
        Ok(())
    }

    pub fn now(&self) -> Ns {
        self.now
    }
    pub fn n_channels(&self) -> usize {
        self.capacity.len()
    }
    pub fn n_flows(&self) -> usize {
        self.flows.len()
    }
    pub fn unfinished(&self) -> usize {
        self.unfinished
    }
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        self.phys.add_stats(&mut s);
        s
    }
    /// The physics' name: the sharing model (`maxmin`, `cm02`) or `packet`.
    pub fn model_name(&self) -> &'static str {
        self.phys.name()
    }
    /// The physics, to read its own reports (downcast with `as_any`).
    pub fn physics(&self) -> &dyn Physics {
        self.phys.as_ref()
    }
    /// Entries of the path arena (grows with flows, not with re-routes).
    pub fn path_arena_len(&self) -> usize {
        self.paths.len()
    }

    /// Record every channel's cumulative bytes each `interval` ns (0 turns it off).
    /// Hold at most `values` sample values (samples x channels). A sample past the
    /// limit, or one whose buffer cannot be allocated, is not taken: sampling stops
    /// and [`Engine::sample_overflow`] turns true, for the caller to report. The
    /// engine never aborts on a sample buffer it cannot allocate.
    pub fn set_sample_limit(&mut self, values: usize) {
        self.sample_limit = values;
    }

    /// Hold at most `samples` samples (and values within [`Engine::set_sample_limit`]'s
    /// limit) by thinning: past either, every other sample is dropped (the first, the
    /// counters' start, is kept) and the interval doubles, as often as needed, so a
    /// run longer than its interval was chosen for ends with `samples / 2` to
    /// `samples` evenly spaced ones. `usize::MAX` (the default): no cap, the limit
    /// stops sampling. Thinning needs at least 3 samples held; below, the limit stops.
    pub fn set_sample_cap(&mut self, samples: usize) {
        self.sample_cap = samples;
    }

    /// The counter interval in force (ticks; a cap may have doubled it).
    pub fn sample_interval(&self) -> Ns {
        self.sample_interval
    }

    /// Keep every other sample, the first and (to come) the one due now: the samples
    /// kept were every interval apart, so they are every two now (the first gap may
    /// be one). As `netsteer.sim.driver.SimDriver` thins a streamed run's samples.
    fn thin_samples(&mut self) {
        let k = self.sample_times.len();
        let n = self.capacity.len();
        let keep: Vec<usize> = std::iter::once(0)
            .chain((if k % 2 == 1 { 1 } else { 2 }..k).step_by(2))
            .collect();
        for (i, &j) in keep.iter().enumerate() {
            self.sample_times[i] = self.sample_times[j];
            if n > 0 {
                self.samples.copy_within(j * n..(j + 1) * n, i * n);
            }
        }
        self.sample_times.truncate(keep.len());
        self.samples.truncate(keep.len() * n);
        self.phys.thin_samples(&keep);
        self.sample_interval = self.sample_interval.saturating_mul(2);
    }

    /// True when sampling stopped at the limit (or on an allocation that failed).
    pub fn sample_overflow(&self) -> bool {
        self.sample_overflow
    }

    pub fn set_sample_interval(&mut self, interval: Ns) {
        self.sample_interval = interval.max(0);
        if self.sample_interval > 0 && !self.sample_scheduled {
            self.sample_scheduled = true;
            let t = self.now;
            self.push(t, Kind::Sample, 0, 0);
        }
    }

    /// Give flows a service level (packet fidelity: the VL follows from SL2VL). A
    /// flow in flight sends its next packets on the new SL's VL.
    pub fn set_sl(&mut self, flows: &[u32], sl: &[u8]) -> Result<(), EngineError> {
        for (&f, &s) in flows.iter().zip(sl) {
            let fl = self
                .flows
                .get_mut(f as usize)
                .ok_or(EngineError::UnknownFlow(f as usize))?;
            let changed = fl.sl != s;
            fl.sl = s;
            if changed && self.meta[f as usize].state == FlowState::Active {
                self.phys.sl_changed(&net!(self), f as usize, self.now);
            }
        }
        Ok(())
    }

    /// Give flows a new strict-priority class and weight (QoS at flow fidelity), in
    /// place: each keeps its id, the bytes it has sent, its release and the latency
    /// and delay it has paid (or is paying), its dependents and anything scheduled
    /// for it by id. An active flow's physics is told now (the fluid one re-solves
    /// the flow's component at this instant); a flow not yet active starts with the
    /// new values. A flow given the class and weight it has, or a finished one, is
    /// left untouched. Nothing changes unless every flow and weight is valid.
    pub fn set_priority_weight(
        &mut self,
        flows: &[u32],
        priority: &[u8],
        weight: &[f64],
    ) -> Result<(), EngineError> {
        if flows.len() != priority.len() || flows.len() != weight.len() {
            return Err(EngineError::Setting(
                "flows, priorities and weights differ in length".into(),
            ));
        }
        for (&f, &w) in flows.iter().zip(weight) {
            if f as usize >= self.flows.len() {
                return Err(EngineError::UnknownFlow(f as usize));
            }
            if !(w > 0.0) || !w.is_finite() {
                return Err(EngineError::BadFlow {
                    flow: f as usize,
                    reason: format!("weight {w} is not positive"),
                });
            }
        }
        for ((&f, &p), &w) in flows.iter().zip(priority).zip(weight) {
            let f = f as usize;
            let fl = &mut self.flows[f];
            let state = self.meta[f].state;
            if (fl.priority == p && fl.weight == w) || state == FlowState::Done {
                continue;
            }
            let old = fl.priority;
            fl.priority = p;
            fl.weight = w;
            if state == FlowState::Active {
                self.phys.share_changed(&net!(self), f, old, self.now);
            }
        }
        Ok(())
    }

    /// Add flows; returns the id of the first. Dependencies may name flows added in
    /// the same call or before.
    pub fn add_flows(&mut self, specs: &[FlowSpec]) -> Result<usize, EngineError> {
        let mut path_offsets = vec![0usize];
        let mut dep_offsets = vec![0usize];
        let (mut paths, mut deps) = (vec![], vec![]);
        for s in specs {
            paths.extend_from_slice(&s.path);
            path_offsets.push(paths.len());
            deps.extend_from_slice(&s.deps);
            dep_offsets.push(deps.len());
        }
        let bytes: Vec<f64> = specs.iter().map(|s| s.bytes).collect();
        let start: Vec<Ns> = specs.iter().map(|s| s.start.unwrap_or(-1)).collect();
        let delay: Vec<Ns> = specs.iter().map(|s| s.delay).collect();
        let weight: Vec<f64> = specs.iter().map(|s| s.weight).collect();
        let priority: Vec<u8> = specs.iter().map(|s| s.priority).collect();
        self.add_batch(&FlowBatch {
            bytes: &bytes,
            path_offsets: &path_offsets,
            paths: &paths,
            start: &start,
            delay: &delay,
            weight: &weight,
            priority: &priority,
            dep_offsets: &dep_offsets,
            deps: &deps,
        })
    }

    /// Add flows given as columns (paths and dependencies in CSR form); returns the
    /// id of the first. This is the fast way in for millions of flows.
    pub fn add_batch(&mut self, b: &FlowBatch) -> Result<usize, EngineError> {
        let first = self.flows.len();
        let n = b.bytes.len();
        let total = first + n;
        let cols_ok = b.start.len() == n
            && b.delay.len() == n
            && b.weight.len() == n
            && b.priority.len() == n;
        if !cols_ok || b.path_offsets.len() != n + 1 || b.dep_offsets.len() != n + 1 {
            return Err(EngineError::BadFlow {
                flow: first,
                reason: "flow columns differ in length".into(),
            });
        }
        let csr_ok = |o: &[usize], len: usize| {
            o[0] == 0 && o[n] == len && o.windows(2).all(|w| w[0] <= w[1])
        };
        if !csr_ok(b.path_offsets, b.paths.len()) || !csr_ok(b.dep_offsets, b.deps.len()) {
            return Err(EngineError::BadFlow {
                flow: first,
                reason: "offsets do not describe the paths or dependencies".into(),
            });
        }
        for i in 0..n {
            let id = first + i;
            if !(b.bytes[i] >= 0.0) || !b.bytes[i].is_finite() {
                return Err(EngineError::BadFlow {
                    flow: id,
                    reason: format!("bytes {} is not a finite non-negative number", b.bytes[i]),
                });
            }
            if !(b.weight[i] > 0.0) || !b.weight[i].is_finite() {
                return Err(EngineError::BadFlow {
                    flow: id,
                    reason: format!("weight {} is not positive", b.weight[i]),
                });
            }
            if b.delay[i] < 0 {
                return Err(EngineError::BadFlow {
                    flow: id,
                    reason: "negative delay".into(),
                });
            }
        }
        if let Some(k) = b
            .paths
            .iter()
            .position(|&c| c as usize >= self.capacity.len())
        {
            let flow = first + b.path_offsets.partition_point(|&o| o <= k) - 1;
            return Err(EngineError::UnknownChannel {
                flow,
                channel: b.paths[k],
            });
        }
        if let Some(k) = b.deps.iter().position(|&d| d as usize >= total) {
            let flow = first + b.dep_offsets.partition_point(|&o| o <= k) - 1;
            return Err(EngineError::BadFlow {
                flow,
                reason: format!("depends on flow {}, which does not exist", b.deps[k]),
            });
        }
        // successors inside the batch, as CSR; dependencies on earlier flows go apart
        let mut count = vec![0u32; n];
        for &d in b.deps {
            if d as usize >= first {
                count[d as usize - first] += 1;
            }
        }
        let pool_base = self.succ_pool.len();
        let mut fill = Vec::with_capacity(n);
        let mut acc = pool_base;
        for &c in &count {
            fill.push(acc);
            acc += c as usize;
        }
        self.succ_pool.resize(acc, 0);
        let mut indeg = vec![0u32; n];
        for i in 0..n {
            for &d in &b.deps[b.dep_offsets[i]..b.dep_offsets[i + 1]] {
                if d as usize >= first {
                    let di = d as usize - first;
                    self.succ_pool[fill[di]] = (first + i) as u32;
                    fill[di] += 1;
                    indeg[i] += 1;
                }
            }
        }
        // Kahn's algorithm over the batch: a cycle leaves flows with dependencies
        {
            let mut left = indeg.clone();
            let mut stack: Vec<usize> = (0..n).filter(|&i| left[i] == 0).collect();
            let mut seen = 0;
            while let Some(i) = stack.pop() {
                seen += 1;
                let s0 = fill[i] - count[i] as usize;
                for k in s0..fill[i] {
                    let j = self.succ_pool[k] as usize - first;
                    left[j] -= 1;
                    if left[j] == 0 {
                        stack.push(j);
                    }
                }
            }
            if seen < n {
                self.succ_pool.truncate(pool_base);
                let f = (0..n).find(|&i| left[i] > 0).unwrap();
                return Err(EngineError::Cycle { flow: first + f });
            }
        }
        self.paths.reserve(b.paths.len());
        for i in 0..n {
            let path_start = self.paths.len();
            let path = &b.paths[b.path_offsets[i]..b.path_offsets[i + 1]];
            self.paths.extend_from_slice(path);
            let start = if b.start[i] < 0 { 0 } else { b.start[i] }.max(self.now);
            self.flows.push(FlowCore {
                bytes: b.bytes[i],
                path_start,
                path_len: path.len(),
                weight: b.weight[i],
                priority: b.priority[i],
                sl: 0,
                version: 0,
            });
            self.meta.push(Meta {
                state: FlowState::Waiting,
                deps_left: indeg[i],
                start,
                delay: b.delay[i],
                released_at: -1,
                done_at: -1,
                background: false,
                streamed: false,
                path_cap: path.len() as u32,
                sent: 0.0,
            });
            self.succ_start.push((fill[i] - count[i] as usize) as u64);
            self.succ_len.push(count[i]);
        }
        self.unfinished += n;
        self.foreground_left += n;
        for i in 0..n {
            for &d in &b.deps[b.dep_offsets[i]..b.dep_offsets[i + 1]] {
                let d = d as usize;
                if d < first && self.meta[d].state != FlowState::Done {
                    self.succ_extra
                        .entry(d as u32)
                        .or_default()
                        .push((first + i) as u32);
                    self.meta[first + i].deps_left += 1;
                }
            }
        }
        for id in first..total {
            if self.meta[id].deps_left == 0 {
                let t = self.meta[id].start;
                self.push(t, Kind::Release, id as u32, 0);
            }
        }
        if self.sample_interval > 0 && !self.sample_scheduled {
            self.sample_scheduled = true;
            let t = self.now;
            self.push(t, Kind::Sample, 0, 0);
        }
        Ok(first)
    }

    fn push(&mut self, time: Ns, kind: Kind, id: u32, version: u32) {
        if kind != Kind::Sample {
            self.pending_work += 1;
        }
        self.events.push(time, Event { kind, id, version });
    }

    fn path_latency(&self, f: usize) -> Ns {
        net!(self).path_latency(f)
    }

    fn release(&mut self, f: usize) {
        self.meta[f].state = FlowState::Latency;
        self.meta[f].released_at = self.now;
        let wire = if self.phys.latency_up_front() {
            self.path_latency(f)
        } else {
            0
        };
        let t = self
            .now
            .saturating_add(wire)
            .saturating_add(self.meta[f].delay);
        // the version tells a reused slot's flow from a stale event of its former one
        let v = self.flows[f].version;
        self.push(t, Kind::LatencyDone, f as u32, v);
    }

    /// Flow `f` is over: its last byte arrived (`complete`), or it was stopped.
    fn finish(&mut self, f: usize, complete: bool) {
        let m = &self.meta[f];
        let sent = if complete {
            self.flows[f].bytes
        } else if m.state == FlowState::Active {
            // a flow stopped early keeps its unsent bytes, so `sent` is exact for it too
            self.phys.sent(f, self.now)
        } else {
            0.0
        };
        if self.meta[f].state == FlowState::Active {
            self.phys.leave(&net!(self), f, self.now);
        }
        let m = &mut self.meta[f];
        m.state = FlowState::Done;
        m.done_at = self.now;
        m.sent = sent;
        let was_background = m.background;
        if m.streamed {
            self.done_log.push(f as u32);
        }
        self.unfinished -= 1;
        if !was_background {
            self.foreground_left -= 1;
            self.end_background_if_idle();
        }
        if self.unfinished == 0 && self.sample_interval > 0 {
            // a last sample when the work ends, so the counters hold every byte
            let t = self.now;
            self.push(t, Kind::Sample, 0, 0);
        }
        let (s0, len) = (self.succ_start[f] as usize, self.succ_len[f] as usize);
        for k in s0..s0 + len {
            let s = self.succ_pool[k] as usize;
            self.dependency_done(s);
        }
        if let Some(extra) = self.succ_extra.remove(&(f as u32)) {
            for s in extra {
                self.dependency_done(s as usize);
            }
        }
    }

    /// Flows of the work are left, none of them will finish as things stand, and
    /// what the physics will still finish is background traffic, which ends with
    /// the work: without it the engine would run an endless flow out (decades of
    /// simulated time, and counter samples all the way up to their memory limit).
    fn only_background_moves(&self) -> bool {
        let meta = &self.meta;
        // (without background flows left, whatever finishes is work; a streamed
        // job holds one count of the work beside its flows)
        let work_flows = self.foreground_left - self.stream_hold as usize;
        self.foreground_left > 0
            && work_flows < self.unfinished
            && !self.phys.will_finish(&|f| !meta[f as usize].background)
    }

    /// iperf-like traffic ends with the work it runs beside.
    fn end_background_if_idle(&mut self) {
        if self.foreground_left == 0 && self.unfinished > 0 {
            let bg: Vec<u32> = (0..self.meta.len() as u32)
                .filter(|&g| {
                    self.meta[g as usize].background
                        && self.meta[g as usize].state != FlowState::Done
                })
                .collect();
            for g in bg {
                if self.meta[g as usize].state != FlowState::Done {
                    self.finish(g as usize, false);
                }
            }
        }
    }

    fn dependency_done(&mut self, s: usize) {
        if self.meta[s].state != FlowState::Waiting {
            return; // stopped before its dependencies were done
        }
        self.meta[s].deps_left -= 1;
        if self.meta[s].deps_left == 0 {
            if self.meta[s].start <= self.now {
                self.release(s); // no need for an event: it is released now
            } else {
                let t = self.meta[s].start;
                self.push(t, Kind::Release, s as u32, 0);
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        if ev.kind == Kind::Sample {
            self.stats.sample_events += 1;
        } else {
            self.stats.events += 1;
        }
        let f = ev.id as usize;
        match ev.kind {
            Kind::Release => self.release(f),
            Kind::LatencyDone => {
                if !self.crosses_physics(f) {
                    self.finish(f, true);
                } else {
                    self.meta[f].state = FlowState::Active;
                    self.phys.start(&net!(self), f, self.now);
                }
            }
            Kind::Sample => {
                if self.sample_times.last() == Some(&self.now) {
                    return;
                }
                let n = self.capacity.len();
                let k = self.sample_times.len();
                if self.sample_cap != usize::MAX
                    && k >= 3
                    && (k + 1 > self.sample_cap
                        || self.samples.len().saturating_add(n) > self.sample_limit)
                {
                    self.thin_samples();
                }
                if self.samples.len().saturating_add(n) > self.sample_limit
                    || self.samples.try_reserve(n).is_err()
                    || self.sample_times.try_reserve(1).is_err()
                    || !self.phys.sample(self.now, self.sample_limit)
                {
                    self.sample_overflow = true;
                    self.sample_interval = 0;
                    self.sample_scheduled = false;
                    return;
                }
                self.sample_times.push(self.now);
                self.phys.channel_bytes_into(self.now, &mut self.samples);
                if self.unfinished > 0 && self.sample_interval > 0 {
                    let t = self.now + self.sample_interval;
                    self.push(t, Kind::Sample, 0, 0);
                } else {
                    self.sample_scheduled = false;
                }
            }
        }
    }

    fn is_live(&self, ev: &Event) -> bool {
        match ev.kind {
            Kind::Release => self.meta[ev.id as usize].state == FlowState::Waiting,
            Kind::LatencyDone => {
                let f = ev.id as usize;
                self.meta[f].state == FlowState::Latency && self.flows[f].version == ev.version
            }
            Kind::Sample => true,
        }
    }

    fn next_time(&self) -> Option<Ns> {
        match (self.events.first_time(), self.phys.next_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run until the clock reaches `until`, every flow is done, or `max_events`
    /// events were handled.
    pub fn run(&mut self, until: Ns, max_events: u64) -> RunStatus {
        let mut handled = 0u64;
        self.feed_stream();
        loop {
            self.phys.settle(&net!(self), self.now);
            if self.unfinished == 0 {
                // only samples and stale events can be left; none after now matters
                self.events.truncate_after(self.now);
                self.phys.truncate_after(self.now);
                self.sample_scheduled = !self.events.is_empty() && self.sample_scheduled;
                if self.events.is_empty() {
                    self.pending_work = 0;
                }
            }
            if until == Ns::MAX
                && self.unfinished > 0
                && self.pending_work == 0
                && (self.phys.next_time().is_none() || self.only_background_moves())
            {
                // only counter samples are left, or background traffic that ends
                // with the rest: nothing of the work can move any more
                return RunStatus::Stalled;
            }
            let Some(t) = self.next_time() else {
                self.sample_scheduled = false;
                if self.unfinished == 0 {
                    return RunStatus::Done;
                }
                if until == Ns::MAX {
                    return RunStatus::Stalled;
                }
                // stalled for now; the caller may change the network at `until`
                self.now = until.max(self.now);
                return RunStatus::Until;
            };
            if t > until {
                self.now = until.max(self.now);
                return RunStatus::Until;
            }
            if handled >= max_events {
                return RunStatus::Budget;
            }
            // every event at this instant, including those it schedules for the same
            // instant, then one settle of the physics. The physics' own events come
            // first, so it never sees the clock go back within the instant
            let mut anchored = false; // an event other than a sample happened at t
            loop {
                let mut any = false;
                if self.phys.next_time() == Some(t) {
                    any = true;
                    let mut done = std::mem::take(&mut self.done_now);
                    // nothing of the engine's happens before its next event: the
                    // physics may run ahead until then (or until a flow finishes)
                    let horizon = match self.events.first_time() {
                        Some(c) if c <= t => t,
                        Some(c) => (c - 1).min(until),
                        None => until,
                    };
                    let budget = max_events.saturating_sub(handled).max(1);
                    let (live, reached) =
                        self.phys
                            .run_ahead(&net!(self), t, horizon, budget, &mut done);
                    if live > 0 {
                        self.now = reached;
                        handled += live;
                        self.stats.events += live;
                        anchored = true;
                    }
                    self.finish_done(done);
                    self.feed_stream();
                }
                if self.events.first_time() == Some(t) {
                    any = true;
                    let (_, batch) = self.events.pop_instant().expect("instant just seen");
                    for ev in &batch {
                        if self.take(t, ev) {
                            anchored |= ev.kind != Kind::Sample;
                            handled += 1;
                        }
                    }
                    self.events.recycle(batch);
                    // what finished may let ranks send more at this very instant
                    self.feed_stream();
                }
                if !any && anchored && self.merge_window > 0 && self.now == t {
                    any = self.merge_into(t, &mut handled);
                }
                if !any {
                    break;
                }
            }
        }
    }

    /// Take event `ev` at `t`: it leaves the pending work (a sample is not work), and
    /// if it is still live the clock moves to `t` and it is handled. True if handled.
    #[inline]
    fn take(&mut self, t: Ns, ev: &Event) -> bool {
        if ev.kind != Kind::Sample {
            self.pending_work -= 1;
        }
        if !self.is_live(ev) {
            return false;
        }
        self.now = t; // only a live event moves the clock
        self.handle(*ev);
        true
    }

    /// Finish the flows the physics reported done (those still active), and keep the
    /// buffer for the next instant.
    fn finish_done(&mut self, mut done: Vec<u32>) {
        for &f in &done {
            if self.meta[f as usize].state == FlowState::Active {
                self.finish(f as usize, true);
            }
        }
        done.clear();
        self.done_now = done;
    }

    /// Handle at `t` what falls due in `(t, t + merge_window)` (see
    /// [`Engine::set_merge_window`]); true if anything was.
    fn merge_into(&mut self, t: Ns, handled: &mut u64) -> bool {
        let end = t.saturating_add(self.merge_window);
        let mut took = false;
        let mut done = std::mem::take(&mut self.done_now);
        while let Some(x) = self.phys.next_time().filter(|&x| x > t && x < end) {
            let live = self.phys.advance(&net!(self), x, &mut done);
            *handled += live;
            self.stats.events += live;
            took |= live > 0;
        }
        self.finish_done(done);
        let mut samples = vec![];
        while let Some(x) = self.events.first_time().filter(|&x| x > t && x < end) {
            let (_, batch) = self.events.pop_instant().expect("instant just seen");
            for ev in &batch {
                if ev.kind == Kind::Sample {
                    samples.push((x, *ev)); // a sample keeps its own time
                    continue;
                }
                if self.take(t, ev) {
                    *handled += 1;
                    took = true;
                }
            }
            self.events.recycle(batch);
        }
        for (x, ev) in samples {
            self.events.push(x, ev);
        }
        self.feed_stream();
        took
    }

    /// Run to the end.
    pub fn run_to_end(&mut self) -> RunStatus {
        self.run(Ns::MAX, u64::MAX)
    }

    // -- streamed flows ---------------------------------------------------------

    /// Route streamed MPI messages with `router` from now on (before
    /// [`Engine::add_mpi_job`]).
    pub fn set_router(&mut self, router: Box<dyn Router>) {
        match &mut self.stream {
            Some(s) => s.set_router(router),
            None => self.stream = Some(Box::new(Stream::new(router))),
        }
    }

    /// Run an MPI job rank by rank from now on: each rank's messages become flows
    /// when the rank reaches them and both ends have posted, and their slots are
    /// reused once they finish. Returns the job's index in [`Stream::jobs`].
    pub fn add_mpi_job(&mut self, spec: JobSpec) -> Result<usize, EngineError> {
        let Some(mut stream) = self.stream.take() else {
            return Err(EngineError::BadFlow {
                flow: self.flows.len(),
                reason: "an MPI job needs a router first (set_router)".into(),
            });
        };
        let added = stream.add_job(self, spec);
        self.stream = Some(stream);
        let job = added.map_err(|reason| EngineError::BadFlow {
            flow: self.flows.len(),
            reason,
        })?;
        if !self.stream_hold {
            self.stream_hold = true;
            self.foreground_left += 1;
        }
        self.check_stream_done();
        Ok(job)
    }

    pub fn stream(&self) -> Option<&Stream> {
        self.stream.as_deref()
    }

    /// A room of `len` entries in the path arena: a free one that fits, or a new one.
    fn room(&mut self, len: usize) -> (usize, u32) {
        if len > 0 {
            if let Some((&cap, starts)) = self.free_rooms.range_mut(len as u32..).next() {
                let s = starts.pop().expect("no empty lists are kept");
                if starts.is_empty() {
                    self.free_rooms.remove(&cap);
                }
                return (s, cap);
            }
        }
        let s = self.paths.len();
        self.paths.resize(s + len, 0);
        (s, len as u32)
    }

    /// Add one flow released now, with no dependencies, in a reused slot when one
    /// is free; returns its id. Its path must name existing channels.
    pub fn add_streamed(
        &mut self,
        bytes: f64,
        path: &[u32],
        delay: Ns,
        weight: f64,
        priority: u8,
        sl: u8,
    ) -> u32 {
        debug_assert!(path.iter().all(|&c| (c as usize) < self.capacity.len()));
        let now = self.now;
        let meta = |cap: u32| Meta {
            state: FlowState::Waiting,
            deps_left: 0,
            start: now,
            delay,
            released_at: -1,
            done_at: -1,
            background: false,
            streamed: true,
            path_cap: cap,
            sent: 0.0,
        };
        let core = |path_start: usize, version: u32| FlowCore {
            bytes,
            path_start,
            path_len: path.len(),
            weight,
            priority,
            sl,
            version,
        };
        let f = if let Some(f) = self.free.pop() {
            let f = f as usize;
            let (old_start, old_cap) = (self.flows[f].path_start, self.meta[f].path_cap);
            let (start, cap) = if path.len() <= old_cap as usize {
                (old_start, old_cap)
            } else {
                let s = self.paths.len();
                self.paths.extend_from_slice(path);
                (s, path.len() as u32)
            };
            let v = self.flows[f].version.wrapping_add(1);
            self.flows[f] = core(start, v);
            self.meta[f] = meta(cap);
            self.paths[start..start + path.len()].copy_from_slice(path);
            f
        } else {
            let s = self.paths.len();
            self.paths.extend_from_slice(path);
            self.flows.push(core(s, 0));
            self.meta.push(meta(path.len() as u32));
            self.succ_start.push(0);
            self.succ_len.push(0);
            self.flows.len() - 1
        };
        self.unfinished += 1;
        self.foreground_left += 1;
        self.release(f);
        if self.sample_interval > 0 && !self.sample_scheduled {
            self.sample_scheduled = true;
            self.push(now, Kind::Sample, 0, 0);
        }
        f as u32
    }

    /// Bytes a flow slot holds in the engine besides its path (4 bytes a hop, and 4
    /// more for its place in each channel's list), for memory estimates.
    pub fn bytes_per_flow() -> usize {
        // the engine's two records, the fluid physics' own (about 72 bytes), successors
        std::mem::size_of::<FlowCore>() + std::mem::size_of::<Meta>() + 72 + 8 + 8 + 4
    }

    /// Flow slots held by streamed flows, in flight or free (the stream's footprint).
    pub fn streamed_slots(&self) -> usize {
        self.meta.iter().filter(|m| m.streamed).count()
    }

    /// Tell the stream which of its flows finished; their slots become free.
    fn feed_stream(&mut self) {
        if self.done_log.is_empty() {
            return;
        }
        let Some(mut stream) = self.stream.take() else {
            self.done_log.clear();
            return;
        };
        let mut done = std::mem::take(&mut self.done_log);
        let mut i = 0;
        while i < done.len() {
            let f = done[i];
            // free first: the message this one lets a rank send can take its slot
            self.free.push(f);
            stream.flow_done(self, f);
            i += 1;
            // flows that finished while the stream added more (zero-time ones)
            done.append(&mut self.done_log);
        }
        done.clear();
        self.done_log = done;
        self.stream = Some(stream);
        self.check_stream_done();
    }

    fn check_stream_done(&mut self) {
        let finished = self.stream.as_ref().is_some_and(|s| s.finished());
        if finished && self.stream_hold {
            self.stream_hold = false;
            self.foreground_left -= 1;
            self.end_background_if_idle();
        }
    }

    // -- reconfiguration ------------------------------------------------------

    /// Bring channels down (capacity 0: their flows stall) or up.
    pub fn set_channels_up(&mut self, channels: &[u32], up: bool) {
        for &c in channels {
            let cu = c as usize;
            self.up[cu] = up;
            self.capacity[cu] = if up { self.base_capacity[cu] } else { 0.0 };
        }
        self.phys.channels_changed(&net!(self), channels, self.now);
    }

    /// Change the capacity of channels (bytes per second).
    pub fn set_capacity(&mut self, channels: &[u32], capacity: f64) {
        for &c in channels {
            let cu = c as usize;
            self.base_capacity[cu] = capacity;
            if self.up[cu] {
                self.capacity[cu] = capacity;
            }
        }
        self.phys.channels_changed(&net!(self), channels, self.now);
    }

    /// Give flow `f` a new path from now on. A flow in flight keeps the bytes it has
    /// sent and does not pay latency again. The old path's room is reused when the
    /// new path fits in it, and otherwise given back for other paths, so re-routing
    /// does not grow the path arena.
    pub fn reroute(&mut self, f: usize, path: &[u32]) -> Result<(), EngineError> {
        if f >= self.flows.len() {
            return Err(EngineError::UnknownFlow(f));
        }
        for &c in path {
            if c as usize >= self.capacity.len() {
                return Err(EngineError::UnknownChannel {
                    flow: f,
                    channel: c,
                });
            }
        }
        let state = self.meta[f].state;
        if state == FlowState::Done {
            return Ok(());
        }
        if state == FlowState::Active {
            self.phys.leave(&net!(self), f, self.now);
        }
        let cap = self.meta[f].path_cap;
        if path.len() > cap as usize {
            let old = self.flows[f].path_start;
            if cap > 0 {
                self.free_rooms.entry(cap).or_default().push(old);
            }
            let (s, c) = self.room(path.len());
            self.flows[f].path_start = s;
            self.meta[f].path_cap = c;
        }
        let s = self.flows[f].path_start;
        self.paths[s..s + path.len()].copy_from_slice(path);
        self.flows[f].path_len = path.len();
        if state == FlowState::Active {
            if path.is_empty() {
                self.finish(f, true);
            } else {
                self.phys.rejoin(&net!(self), f, self.now);
            }
        }
        Ok(())
    }

    /// Mark flows as background traffic: they end as soon as every other flow is done.
    pub fn set_background(&mut self, flows: &[u32]) -> Result<(), EngineError> {
        for &f in flows {
            let f = f as usize;
            if f >= self.flows.len() {
                return Err(EngineError::UnknownFlow(f));
            }
            let m = &mut self.meta[f];
            if !m.background && m.state != FlowState::Done {
                m.background = true;
                self.foreground_left -= 1;
            }
        }
        Ok(())
    }

    /// End flows now, whatever they have left (an iperf-like flow reaching its stop
    /// time). Their dependents are released as if they had finished.
    pub fn stop_flows(&mut self, flows: &[u32]) -> Result<(), EngineError> {
        for &f in flows {
            let f = f as usize;
            if f >= self.flows.len() {
                return Err(EngineError::UnknownFlow(f));
            }
            match self.meta[f].state {
                FlowState::Done => {}
                FlowState::Waiting => {
                    // never released: it cannot be waiting in the heap as live, so
                    // neutralise a pending release by marking it done now
                    self.meta[f].released_at = self.now;
                    self.finish(f, false);
                }
                _ => self.finish(f, false),
            }
        }
        Ok(())
    }

    // -- results ---------------------------------------------------------------

    pub fn state(&self, f: usize) -> FlowState {
        self.meta[f].state
    }
    pub fn completion(&self, f: usize) -> Ns {
        self.meta[f].done_at
    }
    /// Flow `f` goes through the physics: it has hops, and bytes or a physics that
    /// puts an empty message on the wire (packets: one header-only packet). An
    /// empty flow at flow level, or one between two ranks of one host, ends when
    /// its latency does.
    pub fn crosses_physics(&self, f: usize) -> bool {
        // at packet level an empty message is still a header-only packet on the wire
        self.flows[f].path_len > 0 && (self.flows[f].bytes > 0.0 || !self.phys.latency_up_front())
    }
    pub fn release_time(&self, f: usize) -> Ns {
        self.meta[f].released_at
    }
    pub fn rate(&self, f: usize) -> f64 {
        if self.meta[f].state == FlowState::Active {
            self.phys.rate(f)
        } else {
            0.0
        }
    }
    /// Bytes flow `f` has sent up to now: what a per-flow (OpenFlow rule) counter reads.
    pub fn sent(&self, f: usize) -> f64 {
        match self.meta[f].state {
            FlowState::Done => self.meta[f].sent,
            FlowState::Active => self.phys.sent(f, self.now),
            _ => 0.0,
        }
    }
    pub fn flow_path(&self, f: usize) -> &[u32] {
        let fl = &self.flows[f];
        &self.paths[fl.path_start..fl.path_start + fl.path_len]
    }
    /// The flow as the physics sees it (bytes, path, weight, class, SL).
    pub fn flow(&self, f: usize) -> &FlowCore {
        &self.flows[f]
    }
    /// Flows not yet done.
    pub fn unfinished_flows(&self) -> Vec<u32> {
        (0..self.meta.len() as u32)
            .filter(|&f| self.meta[f as usize].state != FlowState::Done)
            .collect()
    }
    /// Flows in flight on any of `channels`.
    pub fn flows_on(&self, channels: &[u32]) -> Vec<u32> {
        self.phys.flows_on(channels)
    }
    /// Cumulative bytes per channel up to now.
    pub fn channel_bytes(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.capacity.len());
        self.phys.channel_bytes_into(self.now, &mut out);
        out
    }
    /// Sample times and, row by row, each channel's cumulative bytes.
    pub fn samples(&self) -> (&[Ns], &[f64]) {
        (&self.sample_times, &self.samples)
    }
}
