//! The event-driven flow-level engine.
//!
//! Time is integer nanoseconds and every ordering is total, so a run is
//! deterministic. A flow is *released* at its start time, or when the flows it
//! depends on have finished; it then pays its path latency (plus any extra delay,
//! which is how compute phases enter a DAG) and then transfers its bytes at the rate
//! the sharing model gives it. Rates are recomputed only for the connected part of
//! the network that an event touched.
//!
//! The network may change between events: channels go down (capacity 0, their flows
//! stall) or come back, capacities change, and flows in flight are re-routed.

use crate::mpi::{JobSpec, Stream};
use crate::queue::EventQueue;
use crate::route::Router;
use crate::sharing::{FlowView, SharingModel};
use crate::solver::{solve_subset, Problem, Workspace};
use crate::Ns;

#[derive(Debug, Clone, PartialEq)]
pub enum EngineError {
    UnknownChannel { flow: usize, channel: u32 },
    UnknownFlow(usize),
    BadFlow { flow: usize, reason: String },
    Cycle { flow: usize },
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

struct Flow {
    bytes: f64,
    remaining: f64,
    rate: f64,
    last: Ns,
    path_start: usize,
    path_len: usize,
    weight: f64,
    eff_weight: f64,
    bound: f64,
    priority: u8,
    state: FlowState,
    deps_left: u32,
    start: Ns,
    delay: Ns,
    released_at: Ns,
    done_at: Ns,
    version: u32,
    background: bool,
    // a streamed flow's slot is reused once its source has heard that it finished
    streamed: bool,
    // room for the path at path_start (a reused slot keeps its room)
    path_cap: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Sample = 0,
    Release = 1,
    LatencyDone = 2,
    Finish = 3,
}

/// A flow starved (rate 0) with less than this many ns of sending left at its old
/// rate finishes at once: the rest is rounding of finish times to whole ns, and
/// would otherwise wait for the higher class to end.
const FINISH_SLACK_NS: i64 = 16;

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
    pub events: u64,
    pub solves: u64,
    pub solved_flows: u64,
    pub solved_flow_hops: u64,
}

/// Buffers reused by every solve, so the hot path allocates nothing.
#[derive(Default)]
struct Scratch {
    queue: Vec<u32>,
    comp_flows: Vec<u32>,
    offsets: Vec<usize>,
    chans: Vec<u32>,
    weight: Vec<f64>,
    bound: Vec<f64>,
    prio: Vec<u8>,
    local: Vec<u32>,
    rates: Vec<f64>,
    view_cap: Vec<f64>,
}

impl Scratch {
    fn clear(&mut self) {
        self.queue.clear();
        self.comp_flows.clear();
        self.offsets.clear();
        self.chans.clear();
        self.weight.clear();
        self.bound.clear();
        self.prio.clear();
        self.local.clear();
        self.rates.clear();
    }
}

pub struct Engine {
    now: Ns,
    model: Box<dyn SharingModel>,
    base_capacity: Vec<f64>,
    capacity: Vec<f64>,
    up: Vec<bool>,
    latency: Vec<Ns>,
    flows: Vec<Flow>,
    paths: Vec<u32>,
    // position of each flow-hop in its channel's list (parallel to `paths`)
    hop_pos: Vec<u32>,
    // successors: a CSR range per flow into succ_pool, plus those added by later batches
    succ_start: Vec<u64>,
    succ_len: Vec<u32>,
    succ_pool: Vec<u32>,
    succ_extra: std::collections::HashMap<u32, Vec<u32>>,
    chan_flows: Vec<Vec<u32>>,
    chan_rate: Vec<f64>,
    chan_bytes: Vec<f64>,
    chan_last: Vec<Ns>,
    events: EventQueue<Event>,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    unfinished: usize,
    // unfinished flows that are not background traffic
    foreground_left: usize,
    sample_interval: Ns,
    // most sample values (samples x channels) held; past it sampling stops
    sample_limit: usize,
    sample_overflow: bool,
    sample_scheduled: bool,
    sample_times: Vec<Ns>,
    samples: Vec<f64>,
    stats: Stats,
    // scratch for component search and solving
    stamp_chan: Vec<u64>,
    stamp_flow: Vec<u64>,
    stamp: u64,
    ws: Workspace,
    scratch: Scratch,
    // streamed flows: slots free for reuse, finished ones the stream has not heard of
    free: Vec<u32>,
    done_log: Vec<u32>,
    stream: Option<Box<Stream>>,
    // the stream's unsent work counts as foreground until it is all sent
    stream_hold: bool,
}

impl Engine {
    /// A network of channels with `capacity` (bytes per second) and `latency` (ns).
    pub fn new(capacity: Vec<f64>, latency: Vec<Ns>, model: Box<dyn SharingModel>) -> Self {
        let n = capacity.len();
        assert_eq!(n, latency.len(), "one latency per channel");
        Engine {
            now: 0,
            model,
            base_capacity: capacity.clone(),
            capacity,
            up: vec![true; n],
            latency,
            flows: vec![],
            paths: vec![],
            hop_pos: vec![],
            succ_start: vec![],
            succ_len: vec![],
            succ_pool: vec![],
            succ_extra: Default::default(),
            chan_flows: vec![Vec::new(); n],
            chan_rate: vec![0.0; n],
            chan_bytes: vec![0.0; n],
            chan_last: vec![0; n],
            events: EventQueue::default(),
            dirty: vec![],
            is_dirty: vec![false; n],
            unfinished: 0,
            foreground_left: 0,
            sample_interval: 0,
            sample_limit: usize::MAX,
            sample_overflow: false,
            sample_scheduled: false,
            sample_times: vec![],
            samples: vec![],
            stats: Stats::default(),
            stamp_chan: vec![0; n],
            stamp_flow: vec![],
            stamp: 0,
            ws: Workspace::default(),
            scratch: Scratch::default(),
            free: vec![],
            done_log: vec![],
            stream: None,
            stream_hold: false,
        }
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
        self.stats
    }
    pub fn model_name(&self) -> &'static str {
        self.model.name()
    }

    /// Record every channel's cumulative bytes each `interval` ns (0 turns it off).
    /// Hold at most `values` sample values (samples x channels). A sample past the
    /// limit, or one whose buffer cannot be allocated, is not taken: sampling stops
    /// and [`Engine::sample_overflow`] turns true, for the caller to report. The
    /// engine never aborts on a sample buffer it cannot allocate.
    pub fn set_sample_limit(&mut self, values: usize) {
        self.sample_limit = values;
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
        self.hop_pos.resize(self.paths.len() + b.paths.len(), 0);
        for i in 0..n {
            let path_start = self.paths.len();
            let path = &b.paths[b.path_offsets[i]..b.path_offsets[i + 1]];
            self.paths.extend_from_slice(path);
            let start = if b.start[i] < 0 { 0 } else { b.start[i] }.max(self.now);
            self.flows.push(Flow {
                bytes: b.bytes[i],
                remaining: b.bytes[i],
                rate: 0.0,
                last: self.now,
                path_start,
                path_len: path.len(),
                weight: b.weight[i],
                eff_weight: b.weight[i],
                bound: f64::INFINITY,
                priority: b.priority[i],
                state: FlowState::Waiting,
                deps_left: indeg[i],
                start,
                delay: b.delay[i],
                released_at: -1,
                done_at: -1,
                version: 0,
                background: false,
                streamed: false,
                path_cap: path.len() as u32,
            });
            self.succ_start.push((fill[i] - count[i] as usize) as u64);
            self.succ_len.push(count[i]);
            self.stamp_flow.push(0);
        }
        self.unfinished += n;
        self.foreground_left += n;
        for i in 0..n {
            for &d in &b.deps[b.dep_offsets[i]..b.dep_offsets[i + 1]] {
                let d = d as usize;
                if d < first && self.flows[d].state != FlowState::Done {
                    self.succ_extra
                        .entry(d as u32)
                        .or_default()
                        .push((first + i) as u32);
                    self.flows[first + i].deps_left += 1;
                }
            }
        }
        for id in first..total {
            if self.flows[id].deps_left == 0 {
                let t = self.flows[id].start;
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
        self.events.push(time, Event { kind, id, version });
    }

    fn path(&self, f: usize) -> &[u32] {
        let fl = &self.flows[f];
        &self.paths[fl.path_start..fl.path_start + fl.path_len]
    }

    fn path_latency(&self, f: usize) -> Ns {
        self.path(f).iter().map(|&c| self.latency[c as usize]).sum()
    }

    fn mark(&mut self, c: u32) {
        if !self.is_dirty[c as usize] {
            self.is_dirty[c as usize] = true;
            self.dirty.push(c);
        }
    }

    fn settle_channel(&mut self, c: usize) {
        let dt = self.now - self.chan_last[c];
        if dt > 0 {
            self.chan_bytes[c] += self.chan_rate[c] * dt as f64 * 1e-9;
        }
        self.chan_last[c] = self.now;
    }

    fn settle_flow(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        let dt = self.now - fl.last;
        if dt > 0 && fl.rate > 0.0 {
            fl.remaining = (fl.remaining - fl.rate * dt as f64 * 1e-9).max(0.0);
        }
        fl.last = self.now;
    }

    fn set_rate(&mut self, f: usize, rate: f64) {
        let old = self.flows[f].rate;
        if old == rate {
            return;
        }
        let (s, n) = (self.flows[f].path_start, self.flows[f].path_len);
        for k in s..s + n {
            let c = self.paths[k] as usize;
            self.settle_channel(c);
            self.chan_rate[c] += rate - old;
            if self.chan_flows[c].len() <= 1 && rate == 0.0 {
                self.chan_rate[c] = 0.0; // no drift on idle channels
            }
        }
        self.flows[f].rate = rate;
    }

    fn attach(&mut self, f: usize) {
        let (s, n) = (self.flows[f].path_start, self.flows[f].path_len);
        for k in s..s + n {
            let c = self.paths[k];
            self.hop_pos[k] = self.chan_flows[c as usize].len() as u32;
            self.chan_flows[c as usize].push(f as u32);
            self.mark(c);
        }
        let mut view_cap = std::mem::take(&mut self.scratch.view_cap);
        view_cap.clear();
        view_cap.extend(self.path(f).iter().map(|&c| self.base_capacity[c as usize]));
        let view = FlowView {
            weight: self.flows[f].weight,
            path_latency_s: self.path_latency(f) as f64 * 1e-9,
            path_capacity: &view_cap,
        };
        let (w, b) = (self.model.weight(&view), self.model.bound(&view));
        self.scratch.view_cap = view_cap;
        self.flows[f].eff_weight = w;
        self.flows[f].bound = b;
    }

    fn detach(&mut self, f: usize) {
        self.set_rate(f, 0.0);
        let (s, n) = (self.flows[f].path_start, self.flows[f].path_len);
        for k in s..s + n {
            let c = self.paths[k] as usize;
            let pos = self.hop_pos[k] as usize;
            let list = &mut self.chan_flows[c];
            debug_assert_eq!(list[pos] as usize, f);
            list.swap_remove(pos);
            if pos < list.len() {
                let g = list[pos] as usize;
                let (gs, gn) = (self.flows[g].path_start, self.flows[g].path_len);
                for kk in gs..gs + gn {
                    if self.paths[kk] as usize == c
                        && self.hop_pos[kk] as usize == self.chan_flows[c].len()
                    {
                        self.hop_pos[kk] = pos as u32;
                        break;
                    }
                }
            }
            self.mark(c as u32);
        }
    }

    /// Re-solve the rates of the flows connected to channels touched since the last
    /// solve, and reschedule their finish events.
    fn resolve(&mut self) {
        if self.dirty.is_empty() {
            return;
        }
        self.stamp += 1;
        let stamp = self.stamp;
        let mut sc = std::mem::take(&mut self.scratch);
        sc.clear();
        std::mem::swap(&mut sc.queue, &mut self.dirty);
        for &c in &sc.queue {
            self.is_dirty[c as usize] = false;
            self.stamp_chan[c as usize] = stamp;
        }
        while let Some(c) = sc.queue.pop() {
            for i in 0..self.chan_flows[c as usize].len() {
                let f = self.chan_flows[c as usize][i] as usize;
                if self.stamp_flow[f] == stamp {
                    continue;
                }
                self.stamp_flow[f] = stamp;
                sc.comp_flows.push(f as u32);
                let fl = &self.flows[f];
                for k in fl.path_start..fl.path_start + fl.path_len {
                    let c2 = self.paths[k];
                    if self.stamp_chan[c2 as usize] != stamp {
                        self.stamp_chan[c2 as usize] = stamp;
                        sc.queue.push(c2);
                    }
                }
            }
        }
        if sc.comp_flows.is_empty() {
            self.scratch = sc;
            return;
        }
        sc.comp_flows.sort_unstable();
        // local problem over the component
        let k = sc.comp_flows.len();
        sc.offsets.push(0);
        for &f in &sc.comp_flows {
            let f = f as usize;
            let fl = &self.flows[f];
            sc.chans
                .extend_from_slice(&self.paths[fl.path_start..fl.path_start + fl.path_len]);
            sc.offsets.push(sc.chans.len());
            sc.weight.push(fl.eff_weight);
            sc.bound.push(fl.bound);
            sc.prio.push(fl.priority);
        }
        sc.local.extend(0..k as u32);
        sc.rates.resize(k, 0.0);
        let problem = Problem {
            capacity: &self.capacity,
            offsets: &sc.offsets,
            channels: &sc.chans,
            weight: &sc.weight,
            bound: &sc.bound,
            priority: &sc.prio,
        };
        solve_subset(&problem, &sc.local, &mut sc.rates, &mut self.ws);
        self.stats.solves += 1;
        self.stats.solved_flows += k as u64;
        self.stats.solved_flow_hops += sc.chans.len() as u64;
        for i in 0..k {
            let f = sc.comp_flows[i] as usize;
            let r = sc.rates[i];
            if r == self.flows[f].rate && self.flows[f].version > 0 {
                continue; // its finish event still stands
            }
            self.settle_flow(f);
            let old = self.flows[f].rate;
            if old > 0.0
                && r == 0.0
                && self.flows[f].remaining <= old * FINISH_SLACK_NS as f64 * 1e-9
            {
                // a few ns of sending left at its old rate: what is left is the ceil
                // of finish times to whole ns, accumulated. It finishes now rather than
                // wait (starved, perhaps) for its last byte.
                self.flows[f].version = self.flows[f].version.wrapping_add(1);
                let (t, v) = (self.now, self.flows[f].version);
                self.push(t, Kind::Finish, f as u32, v);
                continue;
            }
            self.set_rate(f, r);
            self.flows[f].version = self.flows[f].version.wrapping_add(1);
            if let Some(t) = self.finish_time(f, r) {
                let v = self.flows[f].version;
                self.push(t, Kind::Finish, f as u32, v);
            }
        }
        self.scratch = sc;
    }

    /// When flow `f` finishes at rate `r` from now, or `None` if it never does
    /// within the clock's range (a starved flow: it waits for the next solve that
    /// touches its channels, and if none comes the run ends as stalled).
    fn finish_time(&self, f: usize, r: f64) -> Option<Ns> {
        if !(r > 0.0) {
            return None;
        }
        let ns = (self.flows[f].remaining / r * 1e9).ceil();
        // past this the clock would overflow; no real run gets near 146 years
        let horizon = (Ns::MAX / 2 - self.now.max(0)) as f64;
        if ns.is_finite() && ns < horizon {
            Some(self.now + ns as Ns)
        } else {
            None
        }
    }

    fn release(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        fl.state = FlowState::Latency;
        fl.released_at = self.now;
        let t = self
            .now
            .saturating_add(self.path_latency(f))
            .saturating_add(self.flows[f].delay);
        // the version tells a reused slot's flow from a stale event of its former one
        let v = self.flows[f].version;
        self.push(t, Kind::LatencyDone, f as u32, v);
    }

    fn finish(&mut self, f: usize) {
        if self.flows[f].state == FlowState::Active {
            self.settle_flow(f);
            self.detach(f);
        }
        // `remaining` stays as it is: a flow stopped early keeps its unsent bytes,
        // so `sent` is exact for it too (a normal finish zeroes it in `handle`)
        let fl = &mut self.flows[f];
        fl.state = FlowState::Done;
        fl.done_at = self.now;
        let was_background = fl.background;
        if fl.streamed {
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

    /// iperf-like traffic ends with the work it runs beside.
    fn end_background_if_idle(&mut self) {
        if self.foreground_left == 0 && self.unfinished > 0 {
            let bg: Vec<u32> = (0..self.flows.len() as u32)
                .filter(|&g| {
                    self.flows[g as usize].background
                        && self.flows[g as usize].state != FlowState::Done
                })
                .collect();
            for g in bg {
                if self.flows[g as usize].state != FlowState::Done {
                    self.finish(g as usize);
                }
            }
        }
    }

    fn dependency_done(&mut self, s: usize) {
        if self.flows[s].state != FlowState::Waiting {
            return; // stopped before its dependencies were done
        }
        self.flows[s].deps_left -= 1;
        if self.flows[s].deps_left == 0 {
            if self.flows[s].start <= self.now {
                self.release(s); // no need for an event: it is released now
            } else {
                let t = self.flows[s].start;
                self.push(t, Kind::Release, s as u32, 0);
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        self.stats.events += 1;
        let f = ev.id as usize;
        match ev.kind {
            Kind::Release => self.release(f),
            Kind::LatencyDone => {
                if self.flows[f].bytes <= 0.0 || self.flows[f].path_len == 0 {
                    self.flows[f].remaining = 0.0;
                    self.finish(f);
                } else {
                    self.flows[f].state = FlowState::Active;
                    self.flows[f].last = self.now;
                    self.attach(f);
                }
            }
            Kind::Finish => {
                self.flows[f].remaining = 0.0; // the ceil to whole ns leaves a residue
                self.finish(f);
            }
            Kind::Sample => {
                if self.sample_times.last() == Some(&self.now) {
                    return;
                }
                let n = self.capacity.len();
                if self.samples.len().saturating_add(n) > self.sample_limit
                    || self.samples.try_reserve(n).is_err()
                    || self.sample_times.try_reserve(1).is_err()
                {
                    self.sample_overflow = true;
                    self.sample_interval = 0;
                    self.sample_scheduled = false;
                    return;
                }
                self.sample_times.push(self.now);
                for c in 0..self.capacity.len() {
                    let dt = (self.now - self.chan_last[c]) as f64 * 1e-9;
                    self.samples
                        .push(self.chan_bytes[c] + self.chan_rate[c] * dt);
                }
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
            Kind::Finish => {
                let fl = &self.flows[ev.id as usize];
                fl.state == FlowState::Active && fl.version == ev.version
            }
            Kind::Release => self.flows[ev.id as usize].state == FlowState::Waiting,
            Kind::LatencyDone => {
                let fl = &self.flows[ev.id as usize];
                fl.state == FlowState::Latency && fl.version == ev.version
            }
            Kind::Sample => true,
        }
    }

    /// Run until the clock reaches `until`, every flow is done, or `max_events`
    /// events were handled.
    pub fn run(&mut self, until: Ns, max_events: u64) -> RunStatus {
        let mut handled = 0u64;
        self.feed_stream();
        loop {
            self.resolve();
            if self.unfinished == 0 {
                // only samples and stale events can be left; none after now matters
                self.events.truncate_after(self.now);
                self.sample_scheduled = !self.events.is_empty() && self.sample_scheduled;
            }
            let Some(t) = self.events.first_time() else {
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
            // instant, then one solve
            while self.events.first_time() == Some(t) {
                let (_, batch) = self.events.pop_instant().expect("instant just seen");
                for ev in &batch {
                    if self.is_live(ev) {
                        self.now = t; // only a live event moves the clock
                        self.handle(*ev);
                        handled += 1;
                    }
                }
                self.events.recycle(batch);
                // what finished may let ranks send more at this very instant
                self.feed_stream();
            }
        }
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

    /// Add one flow released now, with no dependencies, in a reused slot when one
    /// is free; returns its id. Its path must name existing channels.
    pub fn add_streamed(
        &mut self,
        bytes: f64,
        path: &[u32],
        delay: Ns,
        weight: f64,
        priority: u8,
    ) -> u32 {
        debug_assert!(path.iter().all(|&c| (c as usize) < self.capacity.len()));
        let now = self.now;
        let fresh = |path_start: usize, version: u32| Flow {
            bytes,
            remaining: bytes,
            rate: 0.0,
            last: now,
            path_start,
            path_len: path.len(),
            weight,
            eff_weight: weight,
            bound: f64::INFINITY,
            priority,
            state: FlowState::Waiting,
            deps_left: 0,
            start: now,
            delay,
            released_at: -1,
            done_at: -1,
            version,
            background: false,
            streamed: true,
            path_cap: path.len() as u32,
        };
        let f = if let Some(f) = self.free.pop() {
            let old = &self.flows[f as usize];
            let (start, cap) = if path.len() <= old.path_cap as usize {
                (old.path_start, old.path_cap)
            } else {
                let s = self.paths.len();
                self.paths.extend_from_slice(path);
                self.hop_pos.resize(self.paths.len(), 0);
                (s, path.len() as u32)
            };
            let v = old.version.wrapping_add(1);
            self.flows[f as usize] = Flow {
                path_cap: cap,
                ..fresh(start, v)
            };
            self.paths[start..start + path.len()].copy_from_slice(path);
            f as usize
        } else {
            let s = self.paths.len();
            self.paths.extend_from_slice(path);
            self.hop_pos.resize(self.paths.len(), 0);
            self.flows.push(fresh(s, 0));
            self.succ_start.push(0);
            self.succ_len.push(0);
            self.stamp_flow.push(0);
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
        std::mem::size_of::<Flow>() + 8 + 8 + 4
    }

    /// Flow slots held by streamed flows, in flight or free (the stream's footprint).
    pub fn streamed_slots(&self) -> usize {
        self.flows.iter().filter(|f| f.streamed).count()
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
            self.mark(c);
        }
    }

    /// Change the capacity of channels (bytes per second).
    pub fn set_capacity(&mut self, channels: &[u32], capacity: f64) {
        for &c in channels {
            let cu = c as usize;
            self.base_capacity[cu] = capacity;
            if self.up[cu] {
                self.capacity[cu] = capacity;
            }
            self.mark(c);
        }
    }

    /// Give flow `f` a new path from now on. A flow in flight keeps the bytes it has
    /// sent and does not pay latency again.
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
        let state = self.flows[f].state;
        if state == FlowState::Done {
            return Ok(());
        }
        if state == FlowState::Active {
            self.settle_flow(f);
            self.detach(f);
        }
        let same_len = path.len() == self.flows[f].path_len;
        if same_len {
            let s = self.flows[f].path_start;
            self.paths[s..s + path.len()].copy_from_slice(path);
        } else {
            self.flows[f].path_start = self.paths.len();
            self.flows[f].path_len = path.len();
            self.flows[f].path_cap = path.len() as u32;
            self.paths.extend_from_slice(path);
            self.hop_pos.extend(std::iter::repeat(0).take(path.len()));
        }
        if state == FlowState::Active {
            if path.is_empty() {
                self.finish(f);
            } else {
                self.attach(f);
                self.flows[f].version = self.flows[f].version.wrapping_add(1);
                self.flows[f].rate = 0.0;
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
            let fl = &mut self.flows[f];
            if !fl.background && fl.state != FlowState::Done {
                fl.background = true;
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
            match self.flows[f].state {
                FlowState::Done => {}
                FlowState::Waiting => {
                    // never released: it cannot be waiting in the heap as live, so
                    // neutralise a pending release by marking it done now
                    self.flows[f].released_at = self.now;
                    self.finish(f);
                }
                _ => self.finish(f),
            }
        }
        Ok(())
    }

    // -- results ---------------------------------------------------------------

    pub fn state(&self, f: usize) -> FlowState {
        self.flows[f].state
    }
    pub fn completion(&self, f: usize) -> Ns {
        self.flows[f].done_at
    }
    pub fn release_time(&self, f: usize) -> Ns {
        self.flows[f].released_at
    }
    pub fn rate(&self, f: usize) -> f64 {
        self.flows[f].rate
    }
    /// Bytes flow `f` has sent up to now: what a per-flow (OpenFlow rule) counter reads.
    pub fn sent(&self, f: usize) -> f64 {
        let fl = &self.flows[f];
        let mut left = fl.remaining;
        if fl.state == FlowState::Active && fl.rate > 0.0 {
            left -= fl.rate * (self.now - fl.last) as f64 * 1e-9;
        }
        (fl.bytes - left.max(0.0)).max(0.0)
    }
    pub fn flow_path(&self, f: usize) -> &[u32] {
        self.path(f)
    }
    /// Flows not yet done.
    pub fn unfinished_flows(&self) -> Vec<u32> {
        (0..self.flows.len() as u32)
            .filter(|&f| self.flows[f as usize].state != FlowState::Done)
            .collect()
    }
    /// Flows in flight on any of `channels`.
    pub fn flows_on(&self, channels: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = channels
            .iter()
            .flat_map(|&c| self.chan_flows[c as usize].iter().copied())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
    /// Cumulative bytes per channel up to now.
    pub fn channel_bytes(&self) -> Vec<f64> {
        (0..self.capacity.len())
            .map(|c| {
                self.chan_bytes[c]
                    + self.chan_rate[c] * (self.now - self.chan_last[c]) as f64 * 1e-9
            })
            .collect()
    }
    /// Sample times and, row by row, each channel's cumulative bytes.
    pub fn samples(&self) -> (&[Ns], &[f64]) {
        (&self.sample_times, &self.samples)
    }
}
