//! Flow-level physics: every active flow moves at a rate, and rates come from a
//! sharing model solved over the part of the network an event touched.
//!
//! Rates come from weighted max-min fairness (progressive filling, strict-priority
//! classes) with the weights and bounds the [`SharingModel`] gives; this physics
//! owns the solve. An event (a flow starting or leaving, a flow's weight or class
//! changing, a channel changing) marks the channels it touched; at the end of the
//! instant only the flows connected to them, through shared channels, are solved
//! again. A flow whose weight or class changes (QoS, `share_changed`) counts, for
//! what follows, as leaving at its old level and arriving with its new weight.
//!
//! Within that component the update is selective. Let `T` be the lowest fill
//! level (rate / weight) among the flows that left this instant (their old
//! level) and the flows that arrived (their new one). Progressive filling on the
//! old and the new problem passes the same freeze events below `T`: a channel of
//! a leaving flow cannot saturate below its level (the flow would have frozen
//! there), nor a channel of an arriving one. So every flow whose old level is
//! below `T` keeps its rate exactly. An arriving flow's new level is at least
//! `min(bound / w, cap_c / W_c)` over its channels (`W_c`: all the weight on
//! `c`): no channel saturates below its capacity over its total weight. With
//! those flows fixed at their rates, the max-min allocation of the others is
//! the max-min allocation of the reduced problem (capacities minus the fixed
//! rates): every remaining flow keeps its bottleneck. Only they are solved.
//! Components with several priority classes, and channels that changed, are
//! solved whole. Before any of that, a change whose flows each cross only
//! channels they have to themselves (most changes of a run with little
//! contention) is solved without a walk: each such flow gets its rate alone, as
//! the solve of its one-flow component would give it, and nothing else moves.
//!
//! Above `T` that set can still be most of a contended component (every flow at
//! or above `T` reached through a shared channel), when few of its rates move.
//! When it would exceed the arrivals plus four flows, the tight update solves
//! fewer. Each flow remembers its bottleneck: the channel at which its last solve
//! froze it (saturated, the flow among the highest levels there), or its bound.
//! The tight update solves the arrivals and the flows whose bottleneck is a
//! channel where a flow arrived or left, the other flows kept at their rates (the
//! capacities less those rates). Then it checks the max-min condition on every
//! channel a solved flow crosses: each solved flow has a saturated channel where
//! no flow, kept or solved, is above it; each kept flow whose bottleneck is such
//! a channel still has it there (saturated, none above) — a kept flow bound
//! elsewhere keeps a bottleneck nothing touched. Where the check fails, the kept
//! flows above a solved flow at its bottleneck, or the kept flow that lost its
//! bottleneck, join the solved ones and they are solved again (flows below `T`
//! never join: they keep their rates). Every flow then has a bottleneck and every
//! channel its capacity: that is the max-min allocation, whose rates are unique.
//! Each round is a whole solve, so the first set also takes the flows the checks
//! most often add next (`Fluid::widen`). After six rounds, or if it meets another
//! class, it gives up and the update by levels runs. The kept flows' rates are
//! subtracted before the solve, so the rates come out of another summation than
//! a whole solve's: they agree to rounding (the checks allow 1e-9 of a level),
//! not bit for bit.

use std::any::Any;

use crate::engine::Stats;
use crate::physics::{Net, Physics};
use crate::queue::KeyedQueue;
use crate::sharing::{FlowView, SharingModel};
use crate::solver::{solve_subset, Problem, Workspace, AT_BOUND, UNKNOWN};
use crate::Ns;

/// A flow starved (rate 0) with less than this many ns of sending left at its old
/// rate finishes at once: the rest is rounding of finish times to whole ns, and
/// would otherwise wait for the higher class to end.
const FINISH_SLACK_NS: i64 = 16;

#[derive(Clone, Copy, Default)]
struct FluidFlow {
    bytes: f64,
    remaining: f64,
    rate: f64,
    last: Ns,
    eff_weight: f64,
    bound: f64,
    // bytes already counted on the channels it crossed (its paths before this one)
    credited: f64,
    // bytes sent, summed on their own: `bytes - remaining` would lose whole bytes on a
    // bulk flow, whose nominal 1e18 bytes have an ulp of 128 B
    moved: f64,
    active: bool,
    // started (or re-pathed) since the last solve: no old rate to keep
    fresh: bool,
}

impl FluidFlow {
    /// Its fill level: rate over weight (module text).
    #[inline]
    fn level(&self) -> f64 {
        self.rate / self.eff_weight
    }
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
    seeds: Vec<u32>,
    // per flow solved (as `rates`): its bottleneck (`solver::Workspace::bottleneck`)
    bneck: Vec<u32>,
    // the channels a tight update touched; those whose kept flows changed in a round
    tch: Vec<u32>,
    redo: Vec<u32>,
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
        self.bneck.clear();
        self.tch.clear();
        self.redo.clear();
    }
}

/// How a walk of the flows to solve (`Fluid::collect`) ended.
enum Collected {
    Done,
    /// a reached channel carries another class
    Mixed,
    /// more flows than the budget
    Over,
}

/// A channel as the tight update sees it: load and top level of the flows kept,
/// then of the flows solved; the round that last summed its kept flows, and the
/// last round in which a rate on it moved.
#[derive(Clone, Copy, Default)]
struct ChanTight {
    fixed_load: f64,
    fixed_top: f64,
    s_load: f64,
    s_top: f64,
    // the lowest level of the kept flows bound here, and how many there are (a
    // kept flow whose bottleneck is unknown counts as at level 0: always checked)
    bound_low: f64,
    round: u64,
    moved: u64,
    bound_count: u32,
}

/// The fluid physics (see the module text).
pub struct Fluid {
    model: Box<dyn SharingModel>,
    st: Vec<FluidFlow>,
    // position of each flow-hop in its channel's list (parallel to the engine's path arena)
    hop_pos: Vec<u32>,
    chan_flows: Vec<Vec<u32>>,
    // bytes of the flows that left each channel; those in flight are added when a
    // count is read, so a rate change costs no walk of the flow's path
    chan_bytes: Vec<f64>,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    // each active flow's finish, moved in place when its rate changes
    finishes: KeyedQueue,
    stamp_chan: Vec<u64>,
    stamp_flow: Vec<u64>,
    stamp: u64,
    ws: Workspace,
    // boxed: a solve takes it and gives it back, moving a pointer, not eleven Vecs
    scratch: Option<Box<Scratch>>,
    solves: u64,
    solved_flows: u64,
    solved_flow_hops: u64,
    kept_flows: u64,
    selective: bool,
    // what changed since the last solve (the selective update, module text)
    left_level: f64,
    // the classes of the flows that left: the old problem must have had one class too
    left_class: Option<(u8, u8)>,
    arrived: Vec<u32>,
    whole: bool,
    // capacities less the rates kept, on the channels of the flows solved
    residual: Vec<f64>,
    // per channel an arrival crosses: (safe level, guessed level), memoized per solve
    chan_levels: Vec<(f64, f64)>,
    chan_levels_stamp: Vec<u64>,
    // the stamp of the last `keep_below`: `chan_levels` of the channels it guessed
    levels_memo: u64,
    // the tight update (`tight`): per flow, the channel that bounds it (a saturated
    // channel where it has the highest level), `AT_BOUND` or `UNKNOWN`
    tight: bool,
    bn: Vec<u32>,
    // per channel, the tight update's state (one cache line)
    ct: Vec<ChanTight>,
    // the lowest and highest class of the flows started: one class, no flow's to check
    classes: Option<(u8, u8)>,
    tight_done: u64,
    tight_failed: u64,
    tight_rounds: u64,
}

impl Fluid {
    pub fn new(n_channels: usize, model: Box<dyn SharingModel>) -> Self {
        let n = n_channels;
        Fluid {
            model,
            st: vec![],
            hop_pos: vec![],
            chan_flows: vec![Vec::new(); n],
            chan_bytes: vec![0.0; n],
            dirty: vec![],
            is_dirty: vec![false; n],
            finishes: KeyedQueue::default(),
            stamp_chan: vec![0; n],
            stamp_flow: vec![],
            stamp: 0,
            ws: Workspace::default(),
            scratch: Some(Box::default()),
            solves: 0,
            solved_flows: 0,
            solved_flow_hops: 0,
            kept_flows: 0,
            selective: true,
            left_level: f64::INFINITY,
            left_class: None,
            arrived: vec![],
            whole: false,
            residual: vec![0.0; n],
            chan_levels: vec![(0.0, 0.0); n],
            chan_levels_stamp: vec![0; n],
            levels_memo: 0,
            tight: true,
            bn: vec![],
            ct: vec![ChanTight::default(); n],
            classes: None,
            tight_done: 0,
            tight_failed: 0,
            tight_rounds: 0,
        }
    }

    /// With the selective update on: first try the tight update (`true`, the
    /// default; module text), or go straight to the level-based one (`false`).
    pub fn tight(mut self, on: bool) -> Self {
        self.tight = on;
        self
    }

    /// Tight updates accepted, abandoned (then solved by levels), and their solve
    /// rounds in all.
    pub fn tight_counts(&self) -> (u64, u64, u64) {
        (self.tight_done, self.tight_failed, self.tight_rounds)
    }

    /// Solve every touched component whole (`false`), or only the flows whose
    /// rate can change (`true`, the default): the two agree to rounding.
    pub fn selective(mut self, on: bool) -> Self {
        self.selective = on;
        self
    }

    /// Flows whose rates a solve kept, summed over solves (the selective update's gain).
    pub fn kept_flows(&self) -> u64 {
        self.kept_flows
    }

    fn grow(&mut self, net: &Net, f: usize) {
        if self.st.len() <= f {
            self.st.resize(f + 1, FluidFlow::default());
            self.stamp_flow.resize(f + 1, 0);
            self.bn.resize(f + 1, UNKNOWN);
        }
        if self.hop_pos.len() < net.paths.len() {
            self.hop_pos.resize(net.paths.len(), 0);
        }
    }

    fn mark(&mut self, c: u32) {
        if !self.is_dirty[c as usize] {
            self.is_dirty[c as usize] = true;
            self.dirty.push(c);
        }
    }

    fn settle_flow(&mut self, f: usize, now: Ns) {
        let fl = &mut self.st[f];
        let dt = now - fl.last;
        if dt > 0 && fl.rate > 0.0 {
            let step = fl.rate * dt as f64 * 1e-9;
            fl.remaining = (fl.remaining - step).max(0.0);
            fl.moved = (fl.moved + step).min(fl.bytes);
        }
        fl.last = now;
    }

    /// Bytes flow `f` has sent by `now` and not yet counted on its channels.
    fn uncounted(&self, f: usize, now: Ns) -> f64 {
        (self.sent(f, now) - self.st[f].credited).max(0.0)
    }

    fn attach(&mut self, net: &Net, f: usize) {
        self.grow(net, f);
        let fl = &net.flows[f];
        for k in fl.path_start..fl.path_start + fl.path_len {
            let c = net.paths[k];
            self.hop_pos[k] = self.chan_flows[c as usize].len() as u32;
            self.chan_flows[c as usize].push(f as u32);
            self.mark(c);
        }
        self.take_share(net, f);
    }

    /// Flow `f`'s weight and rate bound from the sharing model (its weight, path).
    fn take_share(&mut self, net: &Net, f: usize) {
        let fl = &net.flows[f];
        let sc = self
            .scratch
            .as_mut()
            .expect("scratch is back after each solve");
        let mut view_cap = std::mem::take(&mut sc.view_cap);
        view_cap.clear();
        view_cap.extend(net.path(f).iter().map(|&c| net.base_capacity[c as usize]));
        let view = FlowView {
            weight: fl.weight,
            path_latency_s: net.path_latency(f) as f64 * 1e-9,
            path_capacity: &view_cap,
        };
        let (w, b) = (self.model.weight(&view), self.model.bound(&view));
        self.scratch
            .as_mut()
            .expect("scratch is back after each solve")
            .view_cap = view_cap;
        self.st[f].eff_weight = w;
        self.st[f].bound = b;
    }

    /// Take settled flow `f` off its path, counting what it sent there.
    fn detach(&mut self, net: &Net, f: usize, now: Ns) {
        let moved = self.uncounted(f, now);
        self.st[f].credited += moved;
        self.st[f].rate = 0.0;
        let fl = &net.flows[f];
        for k in fl.path_start..fl.path_start + fl.path_len {
            let c = net.paths[k] as usize;
            self.chan_bytes[c] += moved;
            let pos = self.hop_pos[k] as usize;
            let list = &mut self.chan_flows[c];
            debug_assert_eq!(list[pos] as usize, f);
            list.swap_remove(pos);
            if pos < list.len() {
                let g = list[pos] as usize;
                let gl = &net.flows[g];
                for kk in gl.path_start..gl.path_start + gl.path_len {
                    if net.paths[kk] as usize == c
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

    /// When flow `f` finishes at rate `r` from now, or `None` if it never does
    /// within the clock's range (a starved flow: it waits for the next solve that
    /// touches its channels, and if none comes the run ends as stalled).
    fn finish_time(&self, f: usize, r: f64, now: Ns) -> Option<Ns> {
        if !(r > 0.0) {
            return None;
        }
        // a whole ns up to floating-point rounding is that ns (crate::ceil_time); the
        // remaining bytes are what is left of the flow's, so their rounding is relative
        // to its whole time at this rate
        let s = &self.st[f];
        let ns = crate::ceil_time(s.remaining / r * 1e9, s.bytes / r * 1e9);
        // past this the clock would overflow; no real run gets near 146 years
        let horizon = (Ns::MAX / 2 - now.max(0)) as f64;
        if ns.is_finite() && ns < horizon {
            Some(now + ns as Ns)
        } else {
            None
        }
    }

    fn forget_changes(&mut self) {
        for &a in &self.arrived {
            if let Some(s) = self.st.get_mut(a as usize) {
                s.fresh = false;
            }
        }
        self.arrived.clear();
        self.left_level = f64::INFINITY;
        self.left_class = None;
        self.whole = false;
    }

    /// The level below which every flow keeps its rate (module text), with the one
    /// priority class every change is in; `None` when the touched components must
    /// be solved whole.
    fn keep_below(&mut self, net: &Net) -> Option<(f64, f64, u8)> {
        if self.whole || !self.selective {
            return None;
        }
        let mut class = self.left_class.map(|(lo, hi)| (lo == hi).then_some(lo));
        let (mut safe, mut guess) = (self.left_level, self.left_level);
        self.stamp += 1;
        let stamp = self.stamp;
        self.levels_memo = stamp;
        for i in 0..self.arrived.len() {
            let a = self.arrived[i] as usize;
            let s = self.st[a];
            if !s.active || !s.fresh {
                continue;
            }
            let p = net.flows[a].priority;
            match class {
                None => class = Some(Some(p)),
                Some(Some(q)) if q == p => {}
                _ => return None,
            }
            if s.bound.is_finite() {
                safe = safe.min(s.bound / s.eff_weight);
                guess = guess.min(s.bound / s.eff_weight);
            }
            for &c in net.path(a) {
                let c = c as usize;
                // (kept in registers: reading back the pair just stored stalls)
                let (lo, hi) = if self.chan_levels_stamp[c] != stamp {
                    let v = self.channel_levels(c, net.capacity[c]);
                    self.chan_levels_stamp[c] = stamp;
                    self.chan_levels[c] = v;
                    v
                } else {
                    self.chan_levels[c]
                };
                safe = safe.min(lo);
                guess = guess.min(hi);
            }
        }
        match class {
            Some(Some(p)) if safe.is_finite() && safe > 0.0 => Some((safe, guess.max(safe), p)),
            _ => None,
        }
    }

    /// Channel `c` alone, its flows' rates capped at what they have: the level an
    /// arrival gets there. Returns (`cap / W`, a lower bound of the arrival's level
    /// in the whole problem; water-filling from it, a guess of that level).
    fn channel_levels(&self, c: usize, cap: f64) -> (f64, f64) {
        let flows = &self.chan_flows[c];
        let w: f64 = flows.iter().map(|&g| self.st[g as usize].eff_weight).sum();
        let lower = cap / w;
        let mut x = lower;
        for _ in 0..4 {
            let (mut low, mut high_w) = (0.0, 0.0);
            for &g in flows {
                let s = &self.st[g as usize];
                if !s.fresh && s.rate < s.eff_weight * x {
                    low += s.rate;
                } else {
                    high_w += s.eff_weight;
                }
            }
            let next = (cap - low) / high_w;
            if !(next > x * (1.0 + 1e-12)) {
                break;
            }
            x = next;
        }
        (lower, x)
    }

    /// Collect into `sc.comp_flows` the flows to solve, from the channels in
    /// `sc.seeds`: every flow connected to them through shared channels (whole), or
    /// (`keep` = (level, class)) only those whose rate can change, reached through
    /// flows that can change, with `residual` the capacity the kept flows leave on
    /// the channels reached. Returns `Mixed` if a reached channel carries another
    /// class (then the components are solved whole), `Over` (with nothing set)
    /// once it would collect more than `budget` flows.
    ///
    /// The set reached, the residuals and `Over` do not depend on the order of the
    /// walk. With one class started (no `Mixed`, whose answer would) the paths of
    /// the flows found are walked only once the channels queued are done: a walk
    /// that goes `Over` mostly finds its flows on the seeds, and then walks no path.
    fn collect(
        &mut self,
        net: &Net,
        sc: &mut Scratch,
        keep: Option<(f64, u8)>,
        residual: &mut [f64],
        budget: usize,
    ) -> Collected {
        self.stamp += 1;
        let stamp = self.stamp;
        sc.comp_flows.clear();
        sc.queue.clear();
        sc.queue.extend_from_slice(&sc.seeds);
        for &c in &sc.seeds {
            self.stamp_chan[c as usize] = stamp;
        }
        let below = keep.map_or(0.0, |(t, _)| t * (1.0 - 1e-9));
        let defer = match keep {
            None => true,
            Some((_, class)) => self.classes == Some((class, class)),
        };
        let mut kept = 0u64;
        let mut walked = 0;
        loop {
            let Some(c) = sc.queue.pop() else {
                if walked == sc.comp_flows.len() {
                    break;
                }
                for i in walked..sc.comp_flows.len() {
                    self.queue_path(
                        net,
                        sc.comp_flows[i] as usize,
                        stamp,
                        &mut sc.queue,
                        residual,
                    );
                }
                walked = sc.comp_flows.len();
                continue;
            };
            let mut left = net.capacity[c as usize];
            for i in 0..self.chan_flows[c as usize].len() {
                let f = self.chan_flows[c as usize][i] as usize;
                if let Some((_, class)) = keep {
                    if net.flows[f].priority != class {
                        return Collected::Mixed;
                    }
                    let s = &self.st[f];
                    if !s.fresh && s.level() < below {
                        left -= s.rate;
                        kept += 1;
                        continue;
                    }
                }
                if self.stamp_flow[f] == stamp {
                    continue;
                }
                self.stamp_flow[f] = stamp;
                if sc.comp_flows.len() == budget {
                    return Collected::Over;
                }
                sc.comp_flows.push(f as u32);
                if !defer {
                    self.queue_path(net, f, stamp, &mut sc.queue, residual);
                    walked = sc.comp_flows.len();
                }
            }
            residual[c as usize] = left.max(0.0);
        }
        self.kept_flows += kept;
        Collected::Done
    }

    /// `collect`: queue the channels of flow `f`'s path not reached yet.
    #[inline(always)]
    fn queue_path(
        &mut self,
        net: &Net,
        f: usize,
        stamp: u64,
        queue: &mut Vec<u32>,
        residual: &mut [f64],
    ) {
        for &c2 in net.path(f) {
            let c2u = c2 as usize;
            if self.stamp_chan[c2u] != stamp {
                self.stamp_chan[c2u] = stamp;
                if self.chan_flows[c2u].len() == 1 {
                    // only `f` (a host's link, mostly): nothing to walk or keep
                    residual[c2u] = net.capacity[c2u].max(0.0);
                } else {
                    queue.push(c2);
                }
            }
        }
    }

    /// Solve the flows of `sc.comp_flows` (sorted first: a fixed summation order)
    /// on `capacity`, into `sc.rates`.
    fn solve_collected(&mut self, sc: &mut Scratch, net: &Net, capacity: &[f64]) {
        if let [f] = sc.comp_flows[..] {
            // one flow (most solves of a run with little contention): solved in
            // place on its own path, as `solve_subset` would solve the copy
            let f = f as usize;
            if let Some((rate, b)) = self.alone(net, f, capacity) {
                sc.bneck.clear();
                sc.bneck.push(b);
                sc.weight.clear();
                sc.weight.push(self.st[f].eff_weight);
                sc.bound.clear();
                sc.bound.push(self.st[f].bound);
                sc.rates.clear();
                sc.rates.push(rate);
                self.solves += 1;
                self.solved_flows += 1;
                self.solved_flow_hops += net.path(f).len() as u64;
                return;
            }
        }
        sc.offsets.clear();
        sc.chans.clear();
        sc.weight.clear();
        sc.bound.clear();
        sc.prio.clear();
        sc.local.clear();
        sc.comp_flows.sort_unstable();
        let k = sc.comp_flows.len();
        sc.offsets.push(0);
        for &f in &sc.comp_flows {
            let f = f as usize;
            let fl = &net.flows[f];
            sc.chans
                .extend_from_slice(&net.paths[fl.path_start..fl.path_start + fl.path_len]);
            sc.offsets.push(sc.chans.len());
            sc.weight.push(self.st[f].eff_weight);
            sc.bound.push(self.st[f].bound);
            sc.prio.push(fl.priority);
        }
        sc.local.extend(0..k as u32);
        sc.rates.clear();
        sc.rates.resize(k, 0.0);
        let problem = Problem {
            capacity,
            offsets: &sc.offsets,
            channels: &sc.chans,
            weight: &sc.weight,
            bound: &sc.bound,
            priority: &sc.prio,
        };
        solve_subset(&problem, &sc.local, &mut sc.rates, &mut self.ws);
        sc.bneck.clear();
        sc.bneck.extend_from_slice(&self.ws.bottleneck()[..k]);
        self.solves += 1;
        self.solved_flows += k as u64;
        self.solved_flow_hops += sc.chans.len() as u64;
    }

    /// The tight update (module text): solve the arrivals and the flows bound by a
    /// touched channel, the others kept at their rates, then check that every flow
    /// on a touched channel still has its bottleneck; where one has not, solve it
    /// too, and again. Returns false, having set nothing, when it gives up (a flow
    /// of another class, one below the safe level `safe` to add, too many rounds):
    /// then the level-based update runs. On success `sc.comp_flows`, `sc.rates` and
    /// `sc.bneck` hold the flows solved, their rates and their checked bottlenecks.
    #[inline(never)]
    fn tight_solve(
        &mut self,
        net: &Net,
        sc: &mut Scratch,
        residual: &mut [f64],
        class: u8,
        safe: f64,
    ) -> bool {
        const ROUNDS: usize = 6;
        const EPS: f64 = 1e-9;
        self.stamp += 1;
        let stamp = self.stamp;
        let below = safe * (1.0 - EPS);
        // every flow ever started is in `class`: no flow's class to read
        let one_class = self.classes == Some((class, class));
        sc.comp_flows.clear();
        sc.tch.clear();
        for i in 0..sc.seeds.len() {
            let c = sc.seeds[i];
            if self.stamp_chan[c as usize] != stamp {
                self.stamp_chan[c as usize] = stamp;
                sc.tch.push(c);
            }
        }
        for i in 0..self.arrived.len() {
            let a = self.arrived[i] as usize;
            let s = &self.st[a];
            if s.active && s.fresh && self.stamp_flow[a] != stamp {
                self.stamp_flow[a] = stamp;
                sc.comp_flows.push(a as u32);
            }
        }
        // the flows a departure or an arrival may move: those bound where it was
        for i in 0..sc.seeds.len() {
            let c = sc.seeds[i];
            for &g in &self.chan_flows[c as usize] {
                let g = g as usize;
                if self.stamp_flow[g] == stamp {
                    continue;
                }
                if !one_class && net.flows[g].priority != class {
                    return false;
                }
                if self.bn[g] == c || self.bn[g] == UNKNOWN {
                    self.stamp_flow[g] = stamp;
                    sc.comp_flows.push(g as u32);
                }
            }
        }
        if !self.widen(net, sc, stamp, class, one_class, below) {
            return false;
        }
        let mut walked = 0;
        for round in 0..ROUNDS {
            self.tight_rounds += 1;
            // what the kept flows take on each touched channel: all of them in the
            // first round, then those of the flows added since (no others moved)
            self.stamp += 1;
            let this = self.stamp;
            sc.redo.clear();
            if round == 0 {
                for i in 0..sc.tch.len() {
                    self.ct[sc.tch[i] as usize].round = this;
                }
                sc.redo.extend_from_slice(&sc.tch);
            }
            for i in walked..sc.comp_flows.len() {
                let f = sc.comp_flows[i] as usize;
                for &c in net.path(f) {
                    let cu = c as usize;
                    if self.ct[cu].round != this {
                        self.ct[cu].round = this;
                        sc.redo.push(c);
                        if self.stamp_chan[cu] != stamp {
                            self.stamp_chan[cu] = stamp;
                            sc.tch.push(c);
                        }
                    }
                }
            }
            walked = sc.comp_flows.len();
            for j in 0..sc.redo.len() {
                let c = sc.redo[j] as usize;
                let (mut load, mut top) = (0.0f64, 0.0f64);
                let (mut low, mut count) = (f64::INFINITY, 0u32);
                for &g in &self.chan_flows[c] {
                    let g = g as usize;
                    if self.stamp_flow[g] == stamp {
                        continue;
                    }
                    if !one_class && net.flows[g].priority != class {
                        return false;
                    }
                    let s = &self.st[g];
                    let lvl = s.level();
                    load += s.rate;
                    top = top.max(lvl);
                    let b = self.bn[g];
                    if b as usize == c || b == UNKNOWN {
                        count += 1;
                        low = low.min(if b == UNKNOWN { 0.0 } else { lvl });
                    }
                }
                let t = &mut self.ct[c];
                t.fixed_load = load;
                t.fixed_top = top;
                t.bound_low = low;
                t.bound_count = count;
                residual[c] = (net.capacity[c] - load).max(0.0);
            }
            for &c in &sc.tch {
                self.ct[c as usize].s_load = 0.0;
                self.ct[c as usize].s_top = 0.0;
            }
            let k = sc.comp_flows.len();
            if k == 0 {
                sc.rates.clear();
                sc.bneck.clear();
            } else {
                self.solve_collected(sc, net, residual);
            }
            // the channels where a rate moved (or a flow came or went): only there
            // can a kept flow have lost its bottleneck
            for &c in &sc.seeds {
                self.ct[c as usize].moved = this;
            }
            for i in 0..k {
                let f = sc.comp_flows[i] as usize;
                let (r, lvl) = (sc.rates[i], sc.rates[i] / sc.weight[i]);
                let moved = r != self.st[f].rate || self.st[f].fresh;
                for &c in net.path(f) {
                    let c = c as usize;
                    self.ct[c].s_load += r;
                    self.ct[c].s_top = self.ct[c].s_top.max(lvl);
                    if moved {
                        self.ct[c].moved = this;
                    }
                }
            }
            let holds = |me: &Self, c: usize, lvl: f64| {
                me.ct[c].fixed_load + me.ct[c].s_load >= net.capacity[c] * (1.0 - EPS)
                    && lvl >= me.ct[c].fixed_top.max(me.ct[c].s_top) * (1.0 - EPS)
            };
            let before = sc.comp_flows.len();
            // every flow solved has a bottleneck, the kept flows' levels counted
            for i in 0..k {
                let b = sc.bneck[i];
                if b == AT_BOUND {
                    continue;
                }
                let f = sc.comp_flows[i] as usize;
                let lvl = sc.rates[i] / sc.weight[i];
                if b != UNKNOWN && holds(self, b as usize, lvl) {
                    continue;
                }
                if let Some(&c) = net.path(f).iter().find(|&&c| holds(self, c as usize, lvl)) {
                    sc.bneck[i] = c;
                    continue;
                }
                // kept flows above it where it froze, and not below the safe level
                // (those keep their rates): they come down, solve them (with the ones
                // another solved flow's check added this round)
                let Some(c) = (b != UNKNOWN).then_some(b as usize) else {
                    return false;
                };
                let top = self.ct[c].fixed_top;
                if !(top > lvl * (1.0 + EPS) && top >= below) {
                    return false;
                }
                for &g in &self.chan_flows[c] {
                    let g = g as usize;
                    let l = self.st[g].level();
                    if self.stamp_flow[g] != stamp && l > lvl * (1.0 + EPS) && l >= below {
                        self.stamp_flow[g] = stamp;
                        sc.comp_flows.push(g as u32);
                    }
                }
            }
            // every kept flow bound by a touched channel is still bound there
            let mut kept = 0;
            for j in 0..sc.tch.len() {
                let c = sc.tch[j] as usize;
                if self.ct[c].moved != this {
                    continue; // as it was: its flows keep their bottlenecks there
                }
                let t = self.ct[c];
                if t.bound_count == 0 {
                    continue;
                }
                if t.bound_low > 0.0 && holds(self, c, t.bound_low) {
                    // `holds` rises with the level: the lowest kept flow bound here
                    // holds, so do the others
                    kept += t.bound_count as u64;
                    continue;
                }
                for &g in &self.chan_flows[c] {
                    let g = g as usize;
                    if self.stamp_flow[g] == stamp
                        || self.bn[g] as usize != c && self.bn[g] != UNKNOWN
                    {
                        continue;
                    }
                    let s = &self.st[g];
                    let lvl = s.level();
                    if self.bn[g] != UNKNOWN && holds(self, c, lvl) {
                        kept += 1;
                        continue;
                    }
                    if lvl < below {
                        return false;
                    }
                    self.stamp_flow[g] = stamp;
                    sc.comp_flows.push(g as u32);
                }
            }
            if sc.comp_flows.len() == before {
                // kept: the flows bound by a touched channel, checked and kept
                self.kept_flows += kept;
                self.tight_done += 1;
                return true;
            }
        }
        false
    }

    /// The tight update's first set, widened by the kept flows that its checks
    /// would most often add one round later (each round is a whole solve; a flow
    /// taken that keeps its rate costs one flow more in one solve):
    /// - on the channel where an arrival is guessed to settle (the lowest of the
    ///   levels `keep_below` guessed on its channels), the flows above that level:
    ///   they come down to share it;
    /// - on the other channels of a flow taken before this step (not an arrival,
    ///   whose channels are all seeds), the flows bound there: where it moves,
    ///   they move.
    ///
    /// Only flows at or above the safe level (`below`) are taken, as the rounds
    /// take them; the checks, not this choice, make the result the max-min
    /// allocation. Returns false when it meets a flow of another class.
    fn widen(
        &mut self,
        net: &Net,
        sc: &mut Scratch,
        stamp: u64,
        class: u8,
        one_class: bool,
        below: f64,
    ) -> bool {
        const EPS: f64 = 1e-9;
        for i in 0..self.arrived.len() {
            let a = self.arrived[i] as usize;
            let s = self.st[a];
            if !s.active || !s.fresh {
                continue;
            }
            let memo = |c: u32| {
                let c = c as usize;
                (self.chan_levels_stamp[c] == self.levels_memo).then(|| self.chan_levels[c].1)
            };
            let bound = if s.bound.is_finite() {
                s.bound / s.eff_weight
            } else {
                f64::INFINITY
            };
            let guess = net
                .path(a)
                .iter()
                .filter_map(|&c| memo(c))
                .fold(bound, f64::min);
            if !guess.is_finite() {
                continue;
            }
            for &c in net.path(a) {
                if !memo(c).is_some_and(|l| l <= guess * (1.0 + 1e-6)) {
                    continue; // not where it is guessed to settle
                }
                for &g in &self.chan_flows[c as usize] {
                    let g = g as usize;
                    let l = self.st[g].level();
                    if self.stamp_flow[g] == stamp || !(l > guess * (1.0 + EPS) && l >= below) {
                        continue;
                    }
                    if !one_class && net.flows[g].priority != class {
                        return false;
                    }
                    self.stamp_flow[g] = stamp;
                    sc.comp_flows.push(g as u32);
                }
            }
        }
        for i in 0..sc.comp_flows.len() {
            let f = sc.comp_flows[i] as usize;
            if self.st[f].fresh {
                continue;
            }
            for &c in net.path(f) {
                let list = &self.chan_flows[c as usize];
                if list.len() < 2 {
                    continue;
                }
                for &g in list {
                    let g = g as usize;
                    if self.stamp_flow[g] == stamp || self.bn[g] != c {
                        continue;
                    }
                    if self.st[g].level() < below {
                        continue;
                    }
                    if !one_class && net.flows[g].priority != class {
                        return false;
                    }
                    self.stamp_flow[g] = stamp;
                    sc.comp_flows.push(g as u32);
                }
            }
        }
        true
    }

    /// Whether a solve that kept the flows below level `t` is the max-min
    /// allocation: every flow solved ends at `t` or above, or at its bound. Then
    /// each has its bottleneck (the kept ones keep theirs: a kept flow's bottleneck
    /// carried no flow above it, so only arrivals can join it, and an arrival
    /// there would have ended below `t`).
    fn guess_holds(&self, sc: &Scratch, t: f64) -> bool {
        let below = t * (1.0 - 1e-9);
        (0..sc.comp_flows.len()).all(|i| {
            let r = sc.rates[i];
            r / sc.weight[i] >= below
                || (sc.bound[i].is_finite() && r >= sc.bound[i] * (1.0 - 1e-12))
        })
    }

    /// The level-based selective update (module text): the flows at or above the
    /// guessed level, then the safe one, solved. `None` when more than `budget`
    /// flows are reached (nothing set), `Some(false)` when a reached channel
    /// carries another class (solve whole), `Some(true)` when solved.
    fn by_levels(
        &mut self,
        net: &Net,
        sc: &mut Scratch,
        residual: &mut [f64],
        (safe, guess, class): (f64, f64, u8),
        budget: usize,
    ) -> Option<bool> {
        let first = if guess > safe * (1.0 + 1e-9) {
            guess
        } else {
            safe
        };
        for t in [first, safe] {
            match self.collect(net, sc, Some((t, class)), residual, budget) {
                Collected::Over => return None,
                Collected::Mixed => return Some(false),
                Collected::Done => {}
            }
            if sc.comp_flows.is_empty() {
                break; // no rate can change
            }
            self.solve_collected(sc, net, residual);
            if t == safe || self.guess_holds(sc, t) {
                break;
            }
        }
        Some(true)
    }

    /// Re-solve the rates of the flows whose rates can change since the last
    /// solve, and reschedule their finish events.
    fn resolve(&mut self, net: &Net, now: Ns) {
        if self.dirty.is_empty() {
            return;
        }
        let mut sc = self
            .scratch
            .take()
            .expect("scratch is back after each solve");
        sc.clear();
        std::mem::swap(&mut sc.seeds, &mut self.dirty);
        self.dirty.clear();
        for &c in &sc.seeds {
            self.is_dirty[c as usize] = false;
        }
        if self.lone(net, &mut sc) {
            self.apply(sc, now);
            return;
        }
        let mut residual = std::mem::take(&mut self.residual);
        let plan = self.keep_below(net);
        // by levels first (kept: the flows below the lowest level that left; a guess
        // checked after the solve, then the safe level) while that set is small;
        // past that, the tight update, and by levels again if it gives up; then
        // the touched components whole
        let mut solved = false;
        if let Some((safe, guess, class)) = plan {
            let budget = if self.tight {
                self.arrived.len() + 4
            } else {
                usize::MAX
            };
            solved = match self.by_levels(net, &mut sc, &mut residual, (safe, guess, class), budget)
            {
                Some(done) => done,
                None => {
                    let done = self.tight_solve(net, &mut sc, &mut residual, class, safe);
                    if !done {
                        self.tight_failed += 1;
                    }
                    done || self
                        .by_levels(
                            net,
                            &mut sc,
                            &mut residual,
                            (safe, guess, class),
                            usize::MAX,
                        )
                        .unwrap_or(false)
                }
            };
        }
        if !solved {
            self.collect(net, &mut sc, None, &mut residual, usize::MAX);
            if !sc.comp_flows.is_empty() {
                self.solve_collected(&mut sc, net, net.capacity);
            }
        }
        self.residual = residual;
        self.apply(sc, now);
    }

    /// The solve's rates and bottlenecks (`sc.comp_flows`, `sc.rates`, `sc.bneck`)
    /// taken: finishes moved where a rate changed.
    fn apply(&mut self, sc: Box<Scratch>, now: Ns) {
        self.forget_changes();
        let k = sc.comp_flows.len();
        for i in 0..k {
            self.bn[sc.comp_flows[i] as usize] = sc.bneck[i];
        }
        for i in 0..k {
            let f = sc.comp_flows[i] as usize;
            let r = sc.rates[i];
            if r == self.st[f].rate {
                continue; // its finish (or its lack of one, starved) still stands
            }
            self.settle_flow(f, now);
            let old = self.st[f].rate;
            if old > 0.0 && r == 0.0 && self.st[f].remaining <= old * FINISH_SLACK_NS as f64 * 1e-9
            {
                // a few ns of sending left at its old rate: what is left is the ceil
                // of finish times to whole ns, accumulated. It finishes now rather than
                // wait (starved, perhaps) for its last byte.
                self.finishes.set(f as u32, now);
                continue;
            }
            self.st[f].rate = r;
            match self.finish_time(f, r, now) {
                Some(t) => self.finishes.set(f as u32, t),
                None => self.finishes.remove(f as u32),
            }
        }
        self.scratch = Some(sc);
    }

    /// Flow `f` solved alone on its path over `capacity`: its rate and bottleneck
    /// ([`crate::solver::alone_at`]), or `None` where that shortcut does not apply.
    fn alone(&self, net: &Net, f: usize, capacity: &[f64]) -> Option<(f64, u32)> {
        let fl = &net.flows[f];
        let path = net.path(f);
        let problem = Problem {
            capacity,
            offsets: &[0, path.len()],
            channels: path,
            weight: &[self.st[f].eff_weight],
            bound: &[self.st[f].bound],
            priority: &[fl.priority],
        };
        let mut rate = [0.0];
        crate::solver::alone_at(&problem, 0, &mut rate).map(|b| (rate[0], b))
    }

    /// When every flow on a changed channel crosses only channels it has to itself
    /// (most changes of a run with little contention), solve each alone into
    /// `sc.comp_flows`, `sc.rates` and `sc.bneck`, and return true: no other flow
    /// shares a channel with them, so no other rate moves, and each one's max-min
    /// rate is its rate alone ([`crate::solver::alone_at`], as the solve of a
    /// one-flow component takes it). Returns false, having set nothing, otherwise.
    fn lone(&mut self, net: &Net, sc: &mut Scratch) -> bool {
        sc.comp_flows.clear();
        for &c in &sc.seeds {
            match self.chan_flows[c as usize][..] {
                [] => {}
                [g] => {
                    let p = net.path(g as usize);
                    if p.iter().any(|&d| self.chan_flows[d as usize].len() != 1) {
                        return false;
                    }
                    if !sc.comp_flows.contains(&g) {
                        sc.comp_flows.push(g);
                    }
                }
                _ => return false,
            }
            if sc.comp_flows.len() > 16 {
                return false; // (`contains` is linear: a wide change goes the usual way)
            }
        }
        sc.rates.clear();
        sc.bneck.clear();
        for i in 0..sc.comp_flows.len() {
            let Some((rate, b)) = self.alone(net, sc.comp_flows[i] as usize, net.capacity) else {
                return false;
            };
            sc.rates.push(rate);
            sc.bneck.push(b);
        }
        // one solve, as the walk of the changed channels would have made
        let k = sc.comp_flows.len() as u64;
        self.solves += (k > 0) as u64;
        self.solved_flows += k;
        self.solved_flow_hops += sc
            .comp_flows
            .iter()
            .map(|&f| net.path(f as usize).len() as u64)
            .sum::<u64>();
        true
    }
}

impl Physics for Fluid {
    fn name(&self) -> &'static str {
        self.model.name()
    }
    fn latency_up_front(&self) -> bool {
        true
    }
    fn can_merge(&self) -> bool {
        true
    }
    fn start(&mut self, net: &Net, f: usize, now: Ns) {
        self.grow(net, f);
        // a slot is reused after its flow left, which dropped its finish; dropping it
        // here too costs a look-up and keeps a start without a leave from popping one
        self.finishes.remove(f as u32);
        self.st[f] = FluidFlow {
            bytes: net.flows[f].bytes,
            remaining: net.flows[f].bytes,
            rate: 0.0,
            last: now,
            eff_weight: net.flows[f].weight,
            bound: f64::INFINITY,
            credited: 0.0,
            moved: 0.0,
            active: true,
            fresh: true,
        };
        self.bn[f] = UNKNOWN;
        let p = net.flows[f].priority;
        self.classes = Some(
            self.classes
                .map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))),
        );
        self.arrived.push(f as u32);
        self.attach(net, f);
    }
    fn leave(&mut self, net: &Net, f: usize, now: Ns) {
        if f < self.st.len() && self.st[f].active {
            let s = self.st[f];
            if !s.fresh {
                // a flow that arrived and left before any solve was in neither problem
                self.left_level = self.left_level.min(s.level());
                let p = net.flows[f].priority;
                self.left_class = Some(
                    self.left_class
                        .map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))),
                );
            }
            self.settle_flow(f, now);
            self.detach(net, f, now);
            self.st[f].active = false;
            self.finishes.remove(f as u32);
        }
    }
    fn rejoin(&mut self, net: &Net, f: usize, _now: Ns) {
        self.grow(net, f);
        self.attach(net, f);
        self.st[f].active = true;
        self.st[f].rate = 0.0;
        // on its new path it arrives: it left its old one (leave)
        self.st[f].fresh = true;
        self.bn[f] = UNKNOWN;
        self.arrived.push(f as u32);
    }
    fn share_changed(&mut self, net: &Net, f: usize, old_priority: u8, now: Ns) {
        if !(f < self.st.len() && self.st[f].active) {
            return;
        }
        // For the selective and tight updates the change is a leave of the flow (at
        // its old level, in its old class) and an arrival (with its new weight, in its
        // new class) at this instant, on the same path: the problems before and after
        // differ by exactly that, and both updates are correct for any departures and
        // arrivals of one instant (module text), so they give the whole solve's rates.
        // A change of class leaves and arrives in two classes, which `keep_below`
        // turns into a whole solve of the component; `classes` takes the new one, so
        // the tight update's one-class shortcut stays true. Unlike a re-route, the flow
        // stays in its channels' lists (the same path) and keeps its rate until the
        // solve: a fresh flow's rate is read by neither update, and a solve that gives
        // it the same rate keeps its finish, one that starves it with a few ns left
        // finishes it (`resolve`), as for any flow whose rate moved.
        let s = self.st[f];
        if !s.fresh {
            self.left_level = self.left_level.min(s.level());
            let p = old_priority;
            self.left_class = Some(
                self.left_class
                    .map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))),
            );
            self.arrived.push(f as u32);
        }
        self.settle_flow(f, now);
        self.take_share(net, f);
        self.st[f].fresh = true;
        self.bn[f] = UNKNOWN;
        let p = net.flows[f].priority;
        self.classes = Some(
            self.classes
                .map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))),
        );
        let fl = &net.flows[f];
        for k in fl.path_start..fl.path_start + fl.path_len {
            self.mark(net.paths[k]);
        }
    }
    fn channels_changed(&mut self, _net: &Net, channels: &[u32], _now: Ns) {
        self.whole = true; // a capacity moved: no level is safe
        for &c in channels {
            self.mark(c);
        }
    }
    fn next_time(&self) -> Option<Ns> {
        self.finishes.first_time()
    }
    fn advance(&mut self, _net: &Net, now: Ns, done: &mut Vec<u32>) -> u64 {
        let first = done.len();
        self.finishes.pop_at(now, done);
        for &f in &done[first..] {
            // only active flows have a finish: leaving and re-pathing drop it
            debug_assert!(self.st[f as usize].active);
            let s = &mut self.st[f as usize];
            s.remaining = 0.0; // the ceil to whole ns leaves a residue
            s.moved = s.bytes;
        }
        (done.len() - first) as u64
    }
    fn will_finish(&self, pick: &dyn Fn(u32) -> bool) -> bool {
        // a flow with a rate has a finish scheduled, a starved one none (nor one
        // whose finish lies past the clock's range: no real run gets there)
        self.finishes.any_key(pick)
    }
    fn settle(&mut self, net: &Net, now: Ns) {
        self.resolve(net, now);
    }
    fn truncate_after(&mut self, now: Ns) {
        self.finishes.truncate_after(now);
    }
    fn sent(&self, f: usize, now: Ns) -> f64 {
        let Some(fl) = self.st.get(f) else { return 0.0 };
        let mut sent = fl.moved;
        if fl.active && fl.rate > 0.0 {
            sent += fl.rate * (now - fl.last) as f64 * 1e-9;
        }
        sent.clamp(0.0, fl.bytes)
    }
    fn rate(&self, f: usize) -> f64 {
        self.st.get(f).map_or(0.0, |s| s.rate)
    }
    fn channel_bytes_into(&self, now: Ns, out: &mut Vec<f64>) {
        for (c, flows) in self.chan_flows.iter().enumerate() {
            let mut bytes = self.chan_bytes[c];
            for &g in flows {
                bytes += self.uncounted(g as usize, now);
            }
            out.push(bytes);
        }
    }
    fn flows_on(&self, channels: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = channels
            .iter()
            .flat_map(|&c| self.chan_flows[c as usize].iter().copied())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
    fn add_stats(&self, s: &mut Stats) {
        s.solves += self.solves;
        s.solved_flows += self.solved_flows;
        s.solved_flow_hops += self.solved_flow_hops;
        s.kept_flows += self.kept_flows;
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
