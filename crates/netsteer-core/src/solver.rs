//! Weighted max-min fair sharing, solved by progressive filling.
//!
//! Every unfrozen flow `f` runs at `w_f * theta`; `theta` rises until a channel
//! saturates (its flows freeze) or a flow reaches its own bound. A channel's
//! saturation level `(cap - frozen_load) / unfrozen_weight` never falls as flows
//! freeze, so a lazy min-heap suffices: a popped key that is stale is recomputed and
//! pushed back (a small problem scans its few keys for the smallest instead: the
//! keys are unique, so the pops are the same). Strict priority: class 0 is filled
//! first, each next class shares what the classes above left.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One sharing problem over `n_channels` channels.
///
/// Flow `f` crosses `channels[offsets[f]..offsets[f+1]]`.
pub struct Problem<'a> {
    pub capacity: &'a [f64],
    pub offsets: &'a [usize],
    pub channels: &'a [u32],
    pub weight: &'a [f64],
    /// Upper bound per flow (`f64::INFINITY` for none).
    pub bound: &'a [f64],
    /// Strict-priority class per flow; 0 is served first.
    pub priority: &'a [u8],
}

/// Residual capacity, as a fraction of a channel's capacity, below which the
/// channel counts as saturated for lower-priority classes.
pub const SATURATED: f64 = 1e-9;

/// A heap entry packed in one integer, popped in ascending order of (level,
/// channel before flow, id): one integer compare instead of three. Levels are never
/// negative; -0.0 sorts before +0.0, as `f64::total_cmp` has it.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
struct Key(u128);

impl Key {
    #[inline]
    fn new(level: f64, id: u32, is_flow: bool) -> Self {
        debug_assert!(!(level < 0.0) && !level.is_nan());
        let bits = level.to_bits();
        // 0 for -0.0, else bits + 1: without a branch (fill makes keys for most hops)
        let l = (bits as u128 + 1) & ((bits >> 63) as u128).wrapping_sub(1);
        Key((l << 64) | ((is_flow as u128) << 32) | id as u128)
    }
    #[inline]
    fn level(self) -> f64 {
        let l = (self.0 >> 64) as u64;
        if l == 0 {
            -0.0
        } else {
            f64::from_bits(l - 1)
        }
    }
    #[inline]
    fn id(self) -> u32 {
        self.0 as u32
    }
    #[inline]
    fn is_flow(self) -> bool {
        (self.0 >> 32) & 1 == 1
    }
}

/// Reusable buffers, so repeated solves allocate nothing per call.
#[derive(Default)]
pub struct Workspace {
    // per channel, what the filling reads together (one bounds check, one line)
    ch: Vec<ChanWs>,
    touched: Vec<u32>,
    adj: Vec<u32>,
    frozen: Vec<bool>,
    heap: BinaryHeap<Reverse<Key>>,
    // grow-only buffers of `fill` (written by index: a resize per fill would
    // write every element), with their lengths kept apart
    keys: Vec<u128>,
    seen: Vec<u32>,
    bottleneck: Vec<u32>,
}

/// A channel in [`fill`]: residual capacity, load frozen, weight unfrozen, its
/// flows `adj[adj_start..adj_end]`, and a flag of the walks.
#[derive(Clone, Copy, Default)]
struct ChanWs {
    residual: f64,
    load: f64,
    wsum: f64,
    adj_start: usize,
    adj_end: usize,
    mark: bool,
}

/// [`Workspace::bottleneck`] of a flow frozen at its own bound.
pub const AT_BOUND: u32 = u32::MAX;
/// [`Workspace::bottleneck`] of a flow solved with other classes: not recorded.
pub const UNKNOWN: u32 = u32::MAX - 1;

impl Workspace {
    /// Per flow of the last [`solve_subset`] (indexed as its `rates`): the channel at
    /// which progressive filling froze it (saturated, the flow among the highest
    /// levels there), [`AT_BOUND`], or [`UNKNOWN`] (several classes).
    pub fn bottleneck(&self) -> &[u32] {
        &self.bottleneck
    }
}

/// Solve `p` and return the rate of every flow (capacity units per second).
///
/// ```
/// use netsteer_core::solver::{solve, Problem};
/// // two flows on one 10-unit channel, weights 1 and 3
/// let rates = solve(&Problem {
///     capacity: &[10.0], offsets: &[0, 1, 2], channels: &[0, 0],
///     weight: &[1.0, 3.0], bound: &[f64::INFINITY; 2], priority: &[0, 0],
/// });
/// assert!((rates[0] - 2.5).abs() < 1e-9 && (rates[1] - 7.5).abs() < 1e-9);
/// ```
pub fn solve(p: &Problem) -> Vec<f64> {
    let n = p.weight.len();
    let flows: Vec<u32> = (0..n as u32).collect();
    let mut rates = vec![0.0; n];
    let mut ws = Workspace::default();
    solve_subset(p, &flows, &mut rates, &mut ws);
    rates
}

/// Solve only `flows` (a closed component: no other flow shares their channels),
/// writing into `rates[f]`.
pub fn solve_subset(p: &Problem, flows: &[u32], rates: &mut [f64], ws: &mut Workspace) {
    if ws.bottleneck.len() < p.weight.len() {
        ws.bottleneck.resize(p.weight.len(), UNKNOWN);
    }
    if let [f] = flows {
        if let Some(b) = alone_at(p, *f as usize, rates) {
            ws.bottleneck[*f as usize] = b;
            return;
        }
    }
    // one class is the common case: no scan of the 256 classes, no allocation
    let first = flows.first().map_or(0, |&f| p.priority[f as usize]);
    if flows.iter().all(|&f| p.priority[f as usize] == first) {
        size(p, ws);
        fill(p, flows, rates, ws, true);
        return;
    }
    prepare(p, flows, ws);
    let mut present = [false; 256];
    for &f in flows {
        present[p.priority[f as usize] as usize] = true;
    }
    let classes: Vec<u8> = (0..=255u8).filter(|&c| present[c as usize]).collect();
    let mut class_flows: Vec<u32> = Vec::with_capacity(flows.len());
    for &class in &classes {
        class_flows.clear();
        class_flows.extend(
            flows
                .iter()
                .copied()
                .filter(|&f| p.priority[f as usize] == class),
        );
        fill(p, &class_flows, rates, ws, false);
        for &f in &class_flows {
            ws.bottleneck[f as usize] = UNKNOWN;
        }
        // what this class took is gone for the next one
        for &f in &class_flows {
            let f = f as usize;
            for &c in &p.channels[p.offsets[f]..p.offsets[f + 1]] {
                let c = c as usize;
                ws.ch[c].residual = (ws.ch[c].residual - rates[f]).max(0.0);
            }
        }
        // A channel the class saturated keeps a rounding residue (1e-7 of its
        // capacity, say); handing that to the next class would give its flows a
        // rate so small that their finish times overflow. It is zero.
        for &c in &ws.touched {
            let c = c as usize;
            if ws.ch[c].residual <= SATURATED * p.capacity[c].max(0.0) {
                ws.ch[c].residual = 0.0;
            }
        }
    }
}

/// `ws.touched` the channels `flows` cross, each with its whole capacity as
/// residual: what [`fill`] starts from when it is not `fresh`.
fn prepare(p: &Problem, flows: &[u32], ws: &mut Workspace) {
    size(p, ws);
    ws.touched.clear();
    for &f in flows {
        let f = f as usize;
        for &c in &p.channels[p.offsets[f]..p.offsets[f + 1]] {
            let c = c as usize;
            if !ws.ch[c].mark {
                ws.ch[c].mark = true;
                ws.touched.push(c as u32);
                ws.ch[c].residual = p.capacity[c].max(0.0);
            }
        }
    }
    for &c in &ws.touched {
        ws.ch[c as usize].mark = false;
    }
}

/// The workspace sized for `p`.
fn size(p: &Problem, ws: &mut Workspace) {
    let nch = p.capacity.len();
    if ws.ch.len() < nch {
        ws.ch.resize(nch, ChanWs::default());
    }
    if ws.frozen.len() < p.weight.len() {
        ws.frozen.resize(p.weight.len(), false);
    }
    if ws.bottleneck.len() < p.weight.len() {
        ws.bottleneck.resize(p.weight.len(), UNKNOWN);
    }
}

/// One flow solved alone (most solves of a streamed run with little contention):
/// what [`fill`] computes for it, the same operations on the same values, without
/// building its adjacency and heap. Returns false, having written nothing, where
/// that shortcut is not plainly the same (a path crossing a channel twice, a
/// weight that is not positive).
pub fn alone(p: &Problem, f: usize, rates: &mut [f64]) -> bool {
    alone_at(p, f, rates).is_some()
}

/// [`alone`], returning the flow's bottleneck (a channel or [`AT_BOUND`], as
/// [`Workspace::bottleneck`]) when it solved it.
pub fn alone_at(p: &Problem, f: usize, rates: &mut [f64]) -> Option<u32> {
    let w = p.weight[f];
    let path = &p.channels[p.offsets[f]..p.offsets[f + 1]];
    if !(w > 0.0) || path.len() > 16 {
        return None;
    }
    for (i, c) in path.iter().enumerate() {
        if path[..i].contains(c) {
            return None;
        }
    }
    // fill: the residual is the capacity (at least 0); each channel's weight sum
    // is `0.0 + w`, it is crossed once, so only the smallest key of its channels
    // goes in the heap, beside the bound's key if the bound is below every residual
    let wsum = 0.0 + w;
    let mut tightest = f64::INFINITY;
    let mut first: Option<(Key, f64)> = None;
    for &c in path {
        let residual = p.capacity[c as usize].max(0.0);
        tightest = tightest.min(residual);
        let k = Key::new(residual / wsum, c, false);
        if first.map_or(true, |(b, _)| k < b) {
            first = Some((k, residual));
        }
    }
    let bound = p.bound[f];
    let bound_key =
        (bound.is_finite() && bound < tightest).then(|| Key::new(bound / w, f as u32, true));
    let Some((key, residual)) = first else {
        // crosses nothing: its bound, else unconstrained
        rates[f] = if bound_key.is_some() {
            bound
        } else {
            f64::INFINITY
        };
        return Some(AT_BOUND);
    };
    if bound_key.is_some_and(|b| b < key) {
        rates[f] = bound;
        return Some(AT_BOUND);
    }
    let level = key.level();
    let current = (residual - 0.0).max(0.0) / wsum;
    if current > level * (1.0 + 1e-12) + 1e-300 {
        return None; // fill would push the key back: not the plain case
    }
    rates[f] = w * current;
    Some(key.id())
}

/// Progressive filling of `flows` on `ws.residual`. `fresh`: every channel starts
/// at its whole capacity, and the channels are found here, in the walk of the
/// paths that counts their flows (one walk less than [`prepare`] then this);
/// otherwise `ws.touched` and the residuals are those a [`prepare`] and the
/// classes above left.
fn fill(p: &Problem, flows: &[u32], rates: &mut [f64], ws: &mut Workspace, fresh: bool) {
    // channel -> flows adjacency (CSR) over the touched channels only:
    // adj[adj_start[c]..adj_end[c]]
    // `adj_end`, `load` and `wsum` are zero outside a fill (sized with zeros, reset
    // at its end): the walk below adds to them without asking whether a channel is
    // new, and records a new one without a branch (on a contended run whether a
    // hop is new is a coin toss, a mispredicted branch each time)
    let need = p.channels.len() + 2 * flows.len();
    if ws.keys.len() < need {
        ws.keys.resize(need, 0);
        ws.seen.resize(need, 0);
    }
    let mut n_touched = 0;
    // every entry goes in one set, popped smallest first: a heap built in linear
    // time, or a scan for a few entries. The fill stops once every flow is frozen,
    // so the channels above the last bottleneck are never popped. Keys are unique
    // (one live entry per channel or flow), so the pops come in one order, the
    // order of the sorted entries merged with the stale ones: the rates do not
    // depend on how the entries are kept.
    let mut n_keys = 0;
    let mut unfrozen = flows.len();
    for &f in flows {
        let fu = f as usize;
        ws.frozen[fu] = false;
        rates[fu] = 0.0;
        ws.bottleneck[fu] = UNKNOWN;
        let w = p.weight[fu];
        let path = &p.channels[p.offsets[fu]..p.offsets[fu + 1]];
        let mut tightest = f64::INFINITY;
        if fresh {
            for &c in path {
                let cu = c as usize;
                let residual = p.capacity[cu].max(0.0);
                let ch = &mut ws.ch[cu];
                let new = !ch.mark;
                ch.mark = true;
                ch.residual = residual;
                ch.adj_end += 1;
                ch.wsum += w;
                ws.seen[n_touched] = c;
                n_touched += new as usize;
                tightest = tightest.min(residual);
            }
        } else {
            for &c in path {
                let cu = c as usize;
                let ch = &mut ws.ch[cu];
                ch.adj_end += 1;
                ch.wsum += w;
                tightest = tightest.min(ch.residual);
            }
        }
        // a bound above what the path can carry never binds (CM02's TCP window
        // usually is): leaving it out of the heap saves a push and a pop
        if p.bound[fu].is_finite() && p.bound[fu] < tightest {
            ws.keys[n_keys] = Key::new(p.bound[fu] / w, f, true).0;
            n_keys += 1;
        } else if path.is_empty() {
            // crosses nothing and has no bound: unconstrained
            ws.frozen[fu] = true;
            rates[fu] = f64::INFINITY;
            ws.bottleneck[fu] = AT_BOUND;
            unfrozen -= 1;
        }
    }
    if fresh {
        ws.touched.clear();
        ws.touched.extend_from_slice(&ws.seen[..n_touched]);
    }
    // A channel that only one of these flows crosses keeps its level until that
    // flow freezes (nothing else moves its load or weight), and is a no-op once it
    // has: of a flow's such channels only the first to pop can act, so only that
    // one (the smallest key) goes in the heap. On a contended run most channels
    // are a host's or a leaf's, crossed by one flow solved. `mark` flags them
    // until their flow is seen below.
    // (branch-free where a hop's case is a coin toss on a contended run: a
    // mispredicted branch costs more than the work it skips)
    let mut acc = 0usize;
    for &c in &ws.touched {
        let cu = c as usize;
        let ch = &mut ws.ch[cu];
        let cnt = ch.adj_end;
        ch.adj_start = acc;
        ch.adj_end = acc; // filled below, ends at acc + cnt
        acc += cnt;
        let live = ch.wsum > 0.0;
        ch.mark = live && cnt == 1; // (set, fresh, by the walk above)
        let level = if live { ch.residual / ch.wsum } else { 0.0 };
        ws.keys[n_keys] = Key::new(level, c, false).0;
        n_keys += (live && cnt > 1) as usize;
    }
    if ws.adj.len() < acc {
        ws.adj.resize(acc, 0);
    }
    for &f in flows {
        let fu = f as usize;
        // no key has all its top bits set (levels are below 2^63 as bits)
        let mut first = u128::MAX;
        for &c in &p.channels[p.offsets[fu]..p.offsets[fu + 1]] {
            let cu = c as usize;
            let ch = &mut ws.ch[cu];
            let at = ch.adj_end;
            ch.adj_end += 1;
            let alone = ch.mark as u64;
            ch.mark = false;
            // a key for every hop, kept (by masks: no branch) for the channels alone
            let level = f64::from_bits((ch.residual / ch.wsum).to_bits() & alone.wrapping_neg());
            ws.adj[at] = f;
            let k = Key::new(level, c, false).0 | (alone as u128).wrapping_sub(1);
            first = if k < first { k } else { first };
        }
        ws.keys[n_keys] = first;
        n_keys += (first != u128::MAX) as usize;
    }
    // A small problem (most: a few flows solved against the rates kept) scans its
    // few entries for the smallest, by masks: no sifting, no mispredicted branch.
    if n_keys <= scan_max() {
        while unfrozen > 0 && n_keys > 0 {
            let mut bi = 0;
            let mut best = ws.keys[0];
            for (i, &k) in ws.keys[..n_keys].iter().enumerate().skip(1) {
                let lt = (k < best) as usize;
                best ^= (best ^ k) & (lt as u128).wrapping_neg();
                bi ^= (bi ^ i) & lt.wrapping_neg();
            }
            match step(p, Key(best), rates, ws, &mut unfrozen) {
                Some(k) => ws.keys[bi] = k.0,
                None => {
                    n_keys -= 1;
                    ws.keys[bi] = ws.keys[n_keys];
                }
            }
        }
    } else {
        let mut init = std::mem::take(&mut ws.heap).into_vec();
        init.clear();
        init.extend(ws.keys[..n_keys].iter().map(|&k| Reverse(Key(k))));
        let mut heap = BinaryHeap::from(init);
        while unfrozen > 0 {
            let Some(Reverse(key)) = heap.pop() else {
                break;
            };
            if let Some(k) = step(p, key, rates, ws, &mut unfrozen) {
                heap.push(Reverse(k));
            }
        }
        ws.heap = heap;
    }
    for &c in &ws.touched {
        let c = c as usize;
        let ch = &mut ws.ch[c];
        ch.adj_end = 0;
        ch.load = 0.0;
        ch.wsum = 0.0;
    }
}

/// Entries up to which [`fill`] scans for the smallest key instead of using a heap.
const SCAN_MAX: usize = 16;

#[cfg(not(test))]
#[inline(always)]
fn scan_max() -> usize {
    SCAN_MAX
}

#[cfg(test)]
thread_local!(static TEST_SCAN_MAX: std::cell::Cell<usize> = const { std::cell::Cell::new(SCAN_MAX) });

/// (tests: set per thread, to solve one problem by scan and by heap)
#[cfg(test)]
fn scan_max() -> usize {
    TEST_SCAN_MAX.with(|c| c.get())
}

/// One popped entry of [`fill`]: a flow frozen at its bound, a channel's flows
/// frozen at its level; or, if the key was stale, the key to put back.
#[inline(always)]
fn step(
    p: &Problem,
    key: Key,
    rates: &mut [f64],
    ws: &mut Workspace,
    unfrozen: &mut usize,
) -> Option<Key> {
    let (level, id, is_flow) = (key.level(), key.id(), key.is_flow());
    if is_flow {
        let f = id as usize;
        if !ws.frozen[f] {
            freeze(p, f, p.bound[f], rates, ws);
            ws.bottleneck[f] = AT_BOUND;
            *unfrozen -= 1;
        }
        return None;
    }
    let c = id as usize;
    let ch = ws.ch[c];
    if ch.wsum <= 0.0 {
        return None;
    }
    let current = (ch.residual - ch.load).max(0.0) / ch.wsum;
    if current > level * (1.0 + 1e-12) + 1e-300 {
        return Some(Key::new(current, id, false));
    }
    for k in ch.adj_start..ch.adj_end {
        let f = ws.adj[k] as usize;
        if !ws.frozen[f] {
            freeze(p, f, p.weight[f] * current, rates, ws);
            ws.bottleneck[f] = c as u32;
            *unfrozen -= 1;
        }
    }
    ws.ch[c].wsum = 0.0;
    None
}

#[inline]
fn freeze(p: &Problem, f: usize, rate: f64, rates: &mut [f64], ws: &mut Workspace) {
    ws.frozen[f] = true;
    rates[f] = rate;
    let w = p.weight[f];
    for &c in &p.channels[p.offsets[f]..p.offsets[f + 1]] {
        let c = c as usize;
        let ch = &mut ws.ch[c];
        ch.load += rate;
        ch.wsum -= w;
        if ch.wsum < 1e-12 * w {
            ch.wsum = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small LCG for the random problems (its top 53 bits).
    fn lcg(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 11
        }
    }

    /// A random problem of the filling tests, owned: up to `max_ch` channels (one
    /// in 8 of capacity 0), up to `max_flows` flows of fewer than `max_hops` hops
    /// (repeats allowed), weights from 1/3 to 3, a bound on one flow in 3, one class.
    struct RandomProblem {
        capacity: Vec<f64>,
        offsets: Vec<usize>,
        channels: Vec<u32>,
        weight: Vec<f64>,
        bound: Vec<f64>,
        priority: Vec<u8>,
    }

    impl RandomProblem {
        fn draw(
            next: &mut impl FnMut() -> u64,
            max_ch: u64,
            max_flows: u64,
            max_hops: u64,
        ) -> Self {
            let n_ch = 1 + next() % max_ch;
            let capacity = (0..n_ch)
                .map(|_| {
                    if next() % 8 == 0 {
                        0.0
                    } else {
                        (1 + next() % 1000) as f64 * 1e7
                    }
                })
                .collect();
            let n = 1 + (next() % max_flows) as usize;
            let (mut offsets, mut channels) = (vec![0], vec![]);
            for _ in 0..n {
                for _ in 0..next() % max_hops {
                    channels.push((next() % n_ch) as u32);
                }
                offsets.push(channels.len());
            }
            let weight = (0..n).map(|_| (1 + next() % 9) as f64 / 3.0).collect();
            let bound = (0..n)
                .map(|_| {
                    if next() % 3 == 0 {
                        (next() % 1000) as f64 * 1e7
                    } else {
                        f64::INFINITY
                    }
                })
                .collect();
            RandomProblem {
                capacity,
                offsets,
                channels,
                weight,
                bound,
                priority: vec![0; n],
            }
        }

        fn problem(&self) -> Problem<'_> {
            Problem {
                capacity: &self.capacity,
                offsets: &self.offsets,
                channels: &self.channels,
                weight: &self.weight,
                bound: &self.bound,
                priority: &self.priority,
            }
        }
    }

    /// `alone` against the whole progressive filling, bit for bit, on random
    /// one-flow problems (zero capacities, ties, bounds above, below and at the
    /// path's tightest channel).
    #[test]
    fn a_flow_alone_gets_what_the_filling_gives_it() {
        let mut next = lcg(7);
        let mut shortcut = 0;
        for _ in 0..200_000 {
            let n_ch = 1 + (next() % 12) as usize;
            let capacity: Vec<f64> = (0..n_ch)
                .map(|_| match next() % 6 {
                    0 => 0.0,
                    1 => 1.25e9,
                    2 => 2.5e9,
                    _ => (next() % 1_000_000) as f64 * 1e3 + 1.0,
                })
                .collect();
            let len = (next() % 7) as usize;
            let path: Vec<u32> = (0..len).map(|_| (next() % n_ch as u64) as u32).collect();
            let weight = match next() % 4 {
                0 => 1.0,
                1 => 0.37,
                _ => (1 + next() % 1000) as f64 / 7.0,
            };
            let bound = match next() % 4 {
                0 => f64::INFINITY,
                1 => capacity[(next() % n_ch as u64) as usize],
                _ => (next() % 3_000_000) as f64 * 1e3,
            };
            let p = Problem {
                capacity: &capacity,
                offsets: &[0, path.len()],
                channels: &path,
                weight: &[weight],
                bound: &[bound],
                priority: &[0],
            };
            let mut fast = [f64::NAN];
            let took = alone(&p, 0, &mut fast);
            let mut ws = Workspace::default();
            prepare(&p, &[0], &mut ws);
            let mut slow = [f64::NAN];
            fill(&p, &[0], &mut slow, &mut ws, false);
            if took {
                shortcut += 1;
                assert_eq!(
                    fast[0].to_bits(),
                    slow[0].to_bits(),
                    "{p_:?}",
                    p_ = (&capacity, &path, weight, bound)
                );
            }
            let mut fused = [f64::NAN];
            let mut ws = Workspace::default();
            size(&p, &mut ws);
            fill(&p, &[0], &mut fused, &mut ws, true);
            assert_eq!(fused[0].to_bits(), slow[0].to_bits());
            let mut via = [f64::NAN];
            solve_subset(&p, &[0], &mut via, &mut Workspace::default());
            assert_eq!(via[0].to_bits(), slow[0].to_bits());
        }
        assert!(shortcut > 100_000);
    }

    /// The scan for the smallest entry pops what the heap pops: the same rates and
    /// bottlenecks, bit for bit, on random problems of one and several classes.
    #[test]
    fn scanned_and_heaped_fillings_agree() {
        let mut next = lcg(13);
        for _ in 0..20_000 {
            let mut r = RandomProblem::draw(&mut next, 24, 16, 7);
            let (n, classes) = (r.weight.len(), 1 + next() % 2);
            r.priority = (0..n).map(|_| (next() % classes) as u8).collect();
            let p = r.problem();
            let flows: Vec<u32> = (0..n as u32).collect();
            let solve_with = |scan: usize| {
                TEST_SCAN_MAX.with(|c| c.set(scan));
                let mut rates = vec![f64::NAN; n];
                let mut ws = Workspace::default();
                solve_subset(&p, &flows, &mut rates, &mut ws);
                TEST_SCAN_MAX.with(|c| c.set(SCAN_MAX));
                (
                    rates.iter().map(|r| r.to_bits()).collect::<Vec<_>>(),
                    ws.bottleneck()[..n].to_vec(),
                )
            };
            assert_eq!(solve_with(0), solve_with(usize::MAX));
        }
    }

    /// The filling that finds its channels as it counts them (`fresh`) gives what
    /// the filling after a separate [`prepare`] gives, bit for bit, bottlenecks too.
    #[test]
    fn a_fresh_filling_is_the_prepared_one() {
        let mut next = lcg(11);
        for _ in 0..20_000 {
            let r = RandomProblem::draw(&mut next, 20, 12, 6);
            let (n, p) = (r.weight.len(), r.problem());
            let flows: Vec<u32> = (0..n as u32).collect();
            let (mut a, mut b) = (vec![f64::NAN; n], vec![f64::NAN; n]);
            let mut wa = Workspace::default();
            prepare(&p, &flows, &mut wa);
            fill(&p, &flows, &mut a, &mut wa, false);
            let mut wb = Workspace::default();
            size(&p, &mut wb);
            fill(&p, &flows, &mut b, &mut wb, true);
            for f in 0..n {
                assert_eq!(a[f].to_bits(), b[f].to_bits());
                assert_eq!(wa.bottleneck[f], wb.bottleneck[f]);
            }
        }
    }
}
