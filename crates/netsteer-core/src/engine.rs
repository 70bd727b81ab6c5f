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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
                write!(f, "flow {flow} crosses channel {channel}, which does not exist")
            }
            EngineError::UnknownFlow(i) => write!(f, "flow {i} does not exist"),
            EngineError::BadFlow { flow, reason } => write!(f, "flow {flow}: {reason}"),
            EngineError::Cycle { flow } => {
                write!(f, "flow {flow} depends on itself through a cycle of dependencies")
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
        FlowSpec { bytes, path, start: None, delay: 0, weight: 1.0, priority: 0, deps: vec![] }
    }
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Sample = 0,
    Release = 1,
    LatencyDone = 2,
    Finish = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: Ns,
    seq: u64,
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
    succ: Vec<Vec<u32>>,
    chan_flows: Vec<Vec<u32>>,
    chan_rate: Vec<f64>,
    chan_bytes: Vec<f64>,
    chan_last: Vec<Ns>,
    events: BinaryHeap<Reverse<Event>>,
    seq: u64,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    unfinished: usize,
    // unfinished flows that are not background traffic
    foreground_left: usize,
    sample_interval: Ns,
    sample_scheduled: bool,
    sample_times: Vec<Ns>,
    samples: Vec<f64>,
    stats: Stats,
    // scratch for component search and solving
    stamp_chan: Vec<u64>,
    stamp_flow: Vec<u64>,
    stamp: u64,
    ws: Workspace,
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
            succ: vec![],
            chan_flows: vec![Vec::new(); n],
            chan_rate: vec![0.0; n],
            chan_bytes: vec![0.0; n],
            chan_last: vec![0; n],
            events: BinaryHeap::new(),
            seq: 0,
            dirty: vec![],
            is_dirty: vec![false; n],
            unfinished: 0,
            foreground_left: 0,
            sample_interval: 0,
            sample_scheduled: false,
            sample_times: vec![],
            samples: vec![],
            stats: Stats::default(),
            stamp_chan: vec![0; n],
            stamp_flow: vec![],
            stamp: 0,
            ws: Workspace::default(),
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
        let first = self.flows.len();
        let total = first + specs.len();
        for (i, s) in specs.iter().enumerate() {
            let id = first + i;
            if !(s.bytes >= 0.0) || !s.bytes.is_finite() {
                return Err(EngineError::BadFlow { flow: id, reason: format!("bytes {} is not a finite non-negative number", s.bytes) });
            }
            if !(s.weight > 0.0) || !s.weight.is_finite() {
                return Err(EngineError::BadFlow { flow: id, reason: format!("weight {} is not positive", s.weight) });
            }
            if s.delay < 0 || s.start.is_some_and(|t| t < 0) {
                return Err(EngineError::BadFlow { flow: id, reason: "negative start or delay".into() });
            }
            for &c in &s.path {
                if c as usize >= self.capacity.len() {
                    return Err(EngineError::UnknownChannel { flow: id, channel: c });
                }
            }
            for &d in &s.deps {
                if d as usize >= total {
                    return Err(EngineError::BadFlow { flow: id, reason: format!("depends on flow {d}, which does not exist") });
                }
            }
        }
        check_acyclic(first, specs, |d| (d as usize) < first)?;
        for s in specs {
            let path_start = self.paths.len();
            self.paths.extend_from_slice(&s.path);
            self.hop_pos.extend(std::iter::repeat(0).take(s.path.len()));
            let start = s.start.unwrap_or(0).max(self.now);
            self.flows.push(Flow {
                bytes: s.bytes,
                remaining: s.bytes,
                rate: 0.0,
                last: self.now,
                path_start,
                path_len: s.path.len(),
                weight: s.weight,
                eff_weight: s.weight,
                bound: f64::INFINITY,
                priority: s.priority,
                state: FlowState::Waiting,
                deps_left: 0,
                start,
                delay: s.delay,
                released_at: -1,
                done_at: -1,
                version: 0,
                background: false,
            });
            self.succ.push(vec![]);
            self.stamp_flow.push(0);
            self.unfinished += 1;
            self.foreground_left += 1;
        }
        for (i, s) in specs.iter().enumerate() {
            let id = first + i;
            for &d in &s.deps {
                if self.flows[d as usize].state != FlowState::Done {
                    self.succ[d as usize].push(id as u32);
                    self.flows[id].deps_left += 1;
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
        self.seq += 1;
        self.events.push(Reverse(Event { time, seq: self.seq, kind, id, version }));
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
        let view_cap: Vec<f64> = self.path(f).iter().map(|&c| self.base_capacity[c as usize]).collect();
        let view = FlowView {
            weight: self.flows[f].weight,
            path_latency_s: self.path_latency(f) as f64 * 1e-9,
            path_capacity: &view_cap,
        };
        let (w, b) = (self.model.weight(&view), self.model.bound(&view));
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
                    if self.paths[kk] as usize == c && self.hop_pos[kk] as usize == self.chan_flows[c].len() {
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
        let mut comp_flows: Vec<u32> = vec![];
        let mut queue: Vec<u32> = std::mem::take(&mut self.dirty);
        for &c in &queue {
            self.is_dirty[c as usize] = false;
            self.stamp_chan[c as usize] = stamp;
        }
        while let Some(c) = queue.pop() {
            for i in 0..self.chan_flows[c as usize].len() {
                let f = self.chan_flows[c as usize][i] as usize;
                if self.stamp_flow[f] == stamp {
                    continue;
                }
                self.stamp_flow[f] = stamp;
                comp_flows.push(f as u32);
                let fl = &self.flows[f];
                for k in fl.path_start..fl.path_start + fl.path_len {
                    let c2 = self.paths[k];
                    if self.stamp_chan[c2 as usize] != stamp {
                        self.stamp_chan[c2 as usize] = stamp;
                        queue.push(c2);
                    }
                }
            }
        }
        if comp_flows.is_empty() {
            return;
        }
        comp_flows.sort_unstable();
        // local problem over the component
        let k = comp_flows.len();
        let mut offsets = Vec::with_capacity(k + 1);
        let mut chans = Vec::new();
        let mut weight = Vec::with_capacity(k);
        let mut bound = Vec::with_capacity(k);
        let mut prio = Vec::with_capacity(k);
        offsets.push(0);
        for &f in &comp_flows {
            let f = f as usize;
            chans.extend_from_slice(self.path(f));
            offsets.push(chans.len());
            weight.push(self.flows[f].eff_weight);
            bound.push(self.flows[f].bound);
            prio.push(self.flows[f].priority);
        }
        let problem = Problem {
            capacity: &self.capacity,
            offsets: &offsets,
            channels: &chans,
            weight: &weight,
            bound: &bound,
            priority: &prio,
        };
        let local: Vec<u32> = (0..k as u32).collect();
        let mut rates = vec![0.0; k];
        let mut ws = std::mem::take(&mut self.ws);
        solve_subset(&problem, &local, &mut rates, &mut ws);
        self.ws = ws;
        self.stats.solves += 1;
        self.stats.solved_flows += k as u64;
        self.stats.solved_flow_hops += chans.len() as u64;
        for (i, &f) in comp_flows.iter().enumerate() {
            let f = f as usize;
            let r = rates[i];
            if r == self.flows[f].rate && self.flows[f].version > 0 {
                continue; // its finish event still stands
            }
            self.settle_flow(f);
            self.set_rate(f, r);
            self.flows[f].version = self.flows[f].version.wrapping_add(1);
            if r > 0.0 {
                let secs = self.flows[f].remaining / r;
                let t = self.now + (secs * 1e9).ceil() as Ns;
                let v = self.flows[f].version;
                self.push(t, Kind::Finish, f as u32, v);
            }
        }
    }

    fn release(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        fl.state = FlowState::Latency;
        fl.released_at = self.now;
        let t = self.now + self.path_latency(f) + self.flows[f].delay;
        self.push(t, Kind::LatencyDone, f as u32, 0);
    }

    fn finish(&mut self, f: usize) {
        if self.flows[f].state == FlowState::Active {
            self.settle_flow(f);
            self.detach(f);
        }
        let fl = &mut self.flows[f];
        fl.remaining = 0.0;
        fl.state = FlowState::Done;
        fl.done_at = self.now;
        let was_background = fl.background;
        self.unfinished -= 1;
        if !was_background {
            self.foreground_left -= 1;
            if self.foreground_left == 0 && self.unfinished > 0 {
                // iperf-like traffic ends with the work it runs beside
                let bg: Vec<u32> = (0..self.flows.len() as u32)
                    .filter(|&g| self.flows[g as usize].background && self.flows[g as usize].state != FlowState::Done)
                    .collect();
                for g in bg {
                    if self.flows[g as usize].state != FlowState::Done {
                        self.finish(g as usize);
                    }
                }
            }
        }
        if self.unfinished == 0 && self.sample_interval > 0 {
            // a last sample when the work ends, so the counters hold every byte
            let t = self.now;
            self.push(t, Kind::Sample, 0, 0);
        }
        let succ = std::mem::take(&mut self.succ[f]);
        for &s in &succ {
            let s = s as usize;
            if self.flows[s].state != FlowState::Waiting {
                continue; // stopped before its dependencies were done
            }
            self.flows[s].deps_left -= 1;
            if self.flows[s].deps_left == 0 {
                let t = self.flows[s].start.max(self.now);
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
                    self.finish(f);
                } else {
                    self.flows[f].state = FlowState::Active;
                    self.flows[f].last = self.now;
                    self.attach(f);
                }
            }
            Kind::Finish => self.finish(f),
            Kind::Sample => {
                if self.sample_times.last() == Some(&self.now) {
                    return;
                }
                self.sample_times.push(self.now);
                for c in 0..self.capacity.len() {
                    let dt = (self.now - self.chan_last[c]) as f64 * 1e-9;
                    self.samples.push(self.chan_bytes[c] + self.chan_rate[c] * dt);
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
            Kind::LatencyDone => self.flows[ev.id as usize].state == FlowState::Latency,
            Kind::Sample => true,
        }
    }

    /// Run until the clock reaches `until`, every flow is done, or `max_events`
    /// events were handled.
    pub fn run(&mut self, until: Ns, max_events: u64) -> RunStatus {
        let mut handled = 0u64;
        loop {
            self.resolve();
            // drop stale finish events
            while let Some(Reverse(ev)) = self.events.peek() {
                if self.is_live(ev) {
                    break;
                }
                self.events.pop();
            }
            let Some(Reverse(top)) = self.events.peek().copied() else {
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
            if self.unfinished == 0 && top.kind == Kind::Sample && top.time > self.now {
                self.events.pop();
                self.sample_scheduled = false;
                continue;
            }
            if top.time > until {
                self.now = until.max(self.now);
                return RunStatus::Until;
            }
            if handled >= max_events {
                return RunStatus::Budget;
            }
            self.now = top.time;
            // every event at this instant, then one solve
            while let Some(Reverse(ev)) = self.events.peek().copied() {
                if ev.time != self.now {
                    break;
                }
                self.events.pop();
                if self.is_live(&ev) {
                    self.handle(ev);
                    handled += 1;
                }
            }
        }
    }

    /// Run to the end.
    pub fn run_to_end(&mut self) -> RunStatus {
        self.run(Ns::MAX, u64::MAX)
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
                return Err(EngineError::UnknownChannel { flow: f, channel: c });
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
    pub fn flow_path(&self, f: usize) -> &[u32] {
        self.path(f)
    }
    /// Flows not yet done.
    pub fn unfinished_flows(&self) -> Vec<u32> {
        (0..self.flows.len() as u32).filter(|&f| self.flows[f as usize].state != FlowState::Done).collect()
    }
    /// Flows in flight on any of `channels`.
    pub fn flows_on(&self, channels: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = channels.iter().flat_map(|&c| self.chan_flows[c as usize].iter().copied()).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
    /// Cumulative bytes per channel up to now.
    pub fn channel_bytes(&self) -> Vec<f64> {
        (0..self.capacity.len())
            .map(|c| self.chan_bytes[c] + self.chan_rate[c] * (self.now - self.chan_last[c]) as f64 * 1e-9)
            .collect()
    }
    /// Sample times and, row by row, each channel's cumulative bytes.
    pub fn samples(&self) -> (&[Ns], &[f64]) {
        (&self.sample_times, &self.samples)
    }
}

/// Kahn's algorithm over the new flows' dependencies; `old(d)` says a dependency
/// is on a flow added before (which cannot close a cycle).
fn check_acyclic(first: usize, specs: &[FlowSpec], old: impl Fn(u32) -> bool) -> Result<(), EngineError> {
    let n = specs.len();
    let mut indeg = vec![0u32; n];
    let mut out: Vec<Vec<u32>> = vec![vec![]; n];
    for (i, s) in specs.iter().enumerate() {
        for &d in &s.deps {
            if !old(d) {
                let di = d as usize - first;
                out[di].push(i as u32);
                indeg[i] += 1;
            }
        }
    }
    let mut stack: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &j in &out[i as usize] {
            indeg[j as usize] -= 1;
            if indeg[j as usize] == 0 {
                stack.push(j);
            }
        }
    }
    if seen < n {
        let f = (0..n).find(|&i| indeg[i] > 0).unwrap();
        return Err(EngineError::Cycle { flow: first + f });
    }
    Ok(())
}
