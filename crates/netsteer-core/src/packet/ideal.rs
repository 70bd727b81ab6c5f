//! A message's time alone on an idle fabric, as the packet model moves it: the
//! reference a message's queueing is measured against.
//!
//! A lone flow's packets meet nothing but each other, so the fabric's rules give
//! each packet's times on each hop as a max-plus recurrence, packet by packet (all
//! times in ps, from the first packet's start). For packet `k` on hop `i` (channel
//! `c_i`, rate `cap_i`, latency `L_i`, serialisation `ser_i` of that packet's wire
//! bytes, rounded up to the ps as the fabric rounds it; `S` the switch latency):
//!
//! * it starts at `s_i(k) = max(a_i(k), e_i(k-1), r_i(k - w))`: once it is at the
//!   switch (`a_i`), the output is free (`e_i(k-1)`, the previous packet's end
//!   there) and its credits are back (`r_i(j)`: when packet `j`'s credits come back
//!   to hop `i`'s sender; `w` packets fit in a buffer, see below). The host has
//!   every packet from the start: `a_0(0) = 0`, and after that only the output and
//!   the credits hold it back (it sends back-to-back);
//! * it arrives at the switch at the head of hop `i` `a_i(k) = s_{i-1}(k) + L_{i-1}
//!   + S` cut-through onto a link no faster, else (store-and-forward, or onto a
//!   faster link) `e_{i-1}(k) + L_{i-1} + S`;
//! * it ends at `e_i(k) = max(s_i(k) + ser_i, t_i(k))`, never before its tail is
//!   in: `t_i(k) = e_{i-1}(k) + L_{i-1}` (`t_0(k) = s_0(k)`);
//! * it leaves hop `i`'s input buffer when it ends on the next hop, `e_{i+1}(k)`,
//!   or, read out into a slower output, at `max(s_{i+1}(k) + ser_i, t_{i+1}(k))`;
//!   at the destination when its tail is in, `e_{h-1}(k) + L_{h-1}`; its credits
//!   are back one link latency later: `r_i(k)` is that time plus `L_i`;
//! * credits: a packet of `c` credit bytes starts only when the packets before it
//!   still holding credits take at most `buffer - c`; every packet but the last is
//!   full (`C` credit bytes), so a full packet waits for `r_i(k - W)` with `W =
//!   floor(buffer / C)`, and the last one, of `C'`, for `r_i(k - floor((buffer -
//!   C') / C) - 1)`. (The times at which packets leave a buffer never go down from
//!   one packet to the next, so the credits come back in order.)
//!
//! An input buffer's head is its only packet that may ask for an output, but a
//! lone flow's next packet could not start earlier anyway: the output is busy with
//! the head until then. The message takes `e_{h-1}(n-1) + L_{h-1}`.
//!
//! That is O(packets). A long message's pipeline goes through regimes: in each,
//! every maximum takes the same term period after period, and the times grow
//! linearly, period by period (one hop at the host's pace while the buffers behind
//! a slower credit loop fill at another, say), until a maximum's winner is
//! overtaken (a buffer is full). Every cycle of the recurrence spans 1 packet (an
//! output busy) or `W` (a credit loop), or is made of those, so a regime repeats
//! every `p = W` packets. Let `X(k)` be the state after packet `k` (every hop's
//! times of packets `k - W ..= k`: all the next packets need) and `F` the map from
//! `X(k)` to `X(k + p)`: maxima of sums, so with each maximum's winning term fixed
//! (a pattern `π`), an affine map `F_π` whose linear part only picks components.
//! If `X(k) - X(k-p) = X(k-p) - X(k-2p) = D` (checked on every component of the
//! last `W + 1` packets) and the two last periods took the same pattern `π`, then
//! `D = Lin_π D`, and `X(k + jp) = X(k) + jD` as long as `π` stays the winning
//! pattern; each maximum's lead of its winner over another term moves by a fixed
//! slope per period (measured between the two periods), so `π` holds for `floor(lead
//! / -slope)` more periods, the least over every maximum of the period with a
//! falling lead (ties give the same value whichever term wins). The state jumps
//! that many periods (at most to the last full packet), and the simulation goes on
//! from there, into the next regime; in the last one (the leads no longer fall:
//! the pipeline is periodic, every component shifted by the same time), it jumps to
//! the end. The work is a few credit windows of packets per regime (the last
//! packet comes from the state before it), never the message's length: a flow of
//! 2^60 bytes costs a few microseconds. Within a bounded budget (`BUDGET`
//! packet-hops) only a buffer of more than `MAX_WATCHED_WINDOW` packets goes
//! unwatched; its message's time, if it is longer than the budget, is extrapolated
//! from its last packets' pace, unproven ([`Lone::Approx`]).

use super::config::{credit_bytes, PacketConfig};

/// One channel of a route, as the fabric sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hop {
    /// Bytes per second.
    pub cap: f64,
    /// Link latency, ps.
    pub lat_ps: i64,
}

/// Serialisation of `wire` bytes on a channel of `cap` bytes/s, ps, rounded up as
/// the fabric rounds it (a whole ps up to floating-point rounding stays that ps,
/// [`crate::ceil_time`]).
pub fn ser_ps(cap: f64, wire: u32) -> i64 {
    let x = wire as f64 * 1e12 / cap;
    crate::ceil_time(x, x) as i64
}

/// Packet-hops [`lone_message`] simulates at most (a few ms) before it
/// extrapolates without a proof.
const BUDGET: u64 = 1 << 20;
/// The longest credit window (packets per buffer) whose regimes are watched: the
/// watch keeps 3 windows of packets.
const MAX_WATCHED_WINDOW: u64 = 1 << 14;
/// Times beyond this (about 53 days, in ps) are none: the reports' ns never overflow.
const LIMIT: i128 = i64::MAX as i128 / 2;

/// What a lone message's time came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lone {
    /// Exact, ps.
    Exact(i64),
    /// Extrapolated with no proof, ps: only for a buffer of more than 16,384
    /// packets, or a pipeline still changing after `BUDGET` packet-hops.
    Approx(i64),
    /// Beyond about 53 days (2^62 ps), or a channel of no capacity on the route
    /// (such a flow never arrives alone).
    Never,
}

impl Lone {
    /// The time in ps, -1 when there is none.
    pub fn ps(self) -> i64 {
        match self {
            Lone::Exact(t) | Lone::Approx(t) => t,
            Lone::Never => -1,
        }
    }
}

// a packet's record, per hop: its start, its end, and when its credits are back
const ST: usize = 0;
const EN: usize = 1;
const RE: usize = 2;
const F: usize = 3;

/// The route's constants for the recurrence.
struct Line {
    h: usize,
    lat: Vec<i128>,
    sw: i128,
    // hop i >= 1: the packet is at the switch once its head is (cut-through onto a
    // link no faster than the one it comes on)
    ct: Vec<bool>,
    // hop i < h - 1: the packet is read out of hop i's buffer at hop i's rate into a
    // slower output
    fast: Vec<bool>,
    // per hop: serialisation of a full packet and of the last one
    ser: Vec<[i128; 2]>,
    // credits: a full packet waits for the credits of the one lag[0] before it, the
    // last one for those of the one lag[1] before it
    lag: [u64; 2],
}

/// A term of one of the recurrence's maxima, or none.
const NO: i128 = i128::MIN;

impl Line {
    fn new(cfg: &PacketConfig, hops: &[Hop], last_wire: u32) -> Line {
        let h = hops.len();
        let full_wire = cfg.mtu + cfg.header;
        let (c, c_last) = (
            credit_bytes(full_wire) as u64,
            credit_bytes(last_wire) as u64,
        );
        let b = cfg.buffer as u64;
        Line {
            h,
            lat: hops.iter().map(|x| x.lat_ps as i128).collect(),
            sw: cfg.switch_latency as i128 * 1000,
            ct: (0..h)
                .map(|i| i > 0 && cfg.cut_through && hops[i].cap <= hops[i - 1].cap)
                .collect(),
            fast: (0..h)
                .map(|i| i + 1 < h && hops[i].cap > hops[i + 1].cap)
                .collect(),
            ser: hops
                .iter()
                .map(|x| {
                    [
                        ser_ps(x.cap, full_wire) as i128,
                        ser_ps(x.cap, last_wire) as i128,
                    ]
                })
                .collect(),
            lag: [(b / c).max(1), b.saturating_sub(c_last) / c + 1],
        }
    }

    /// The terms of the maximum that gives a packet's start on hop `i`, into `t`: at
    /// the switch, output free, credits back (`NO` for one that is not there); `me`
    /// is the packet's record as far as it is known (hop `i`'s terms need only the
    /// hops before it), `prev` the packet before's, `credit` that of the one whose
    /// credits it waits for.
    fn terms(
        &self,
        i: usize,
        first: bool,
        me: &[i128],
        prev: Option<&[i64]>,
        credit: Option<&[i64]>,
        t: &mut [i128; 3],
    ) {
        t[0] = if i == 0 {
            if first {
                0
            } else {
                NO
            }
        } else if self.ct[i] {
            me[(i - 1) * F + ST] + self.lat[i - 1] + self.sw
        } else {
            me[(i - 1) * F + EN] + self.lat[i - 1] + self.sw
        };
        t[1] = prev.map_or(NO, |p| p[i * F + EN] as i128);
        t[2] = credit.map_or(NO, |c| c[i * F + RE] as i128);
    }

    /// Packet `k`'s record into `out` (start, end, credits back, per hop), from the
    /// previous packet's (`prev`) and that of the one whose credits it waits for
    /// (`credit`); None when a time goes beyond `LIMIT`.
    fn packet(
        &self,
        first: bool,
        last: bool,
        prev: Option<&[i64]>,
        credit: Option<&[i64]>,
        me: &mut [i128],
        out: &mut [i64],
    ) -> Option<()> {
        let (h, li) = (self.h, last as usize);
        let mut t = [NO; 3];
        for i in 0..h {
            self.terms(i, first, me, prev, credit, &mut t);
            let st = t[0].max(t[1]).max(t[2]);
            let tail = if i == 0 {
                st
            } else {
                me[(i - 1) * F + EN] + self.lat[i - 1]
            };
            me[i * F + ST] = st;
            me[i * F + EN] = (st + self.ser[i][li]).max(tail);
        }
        for i in 0..h {
            let left = if i + 1 == h {
                me[i * F + EN] + self.lat[i]
            } else if self.fast[i] {
                (me[(i + 1) * F + ST] + self.ser[i][li]).max(me[i * F + EN] + self.lat[i])
            } else {
                me[(i + 1) * F + EN]
            };
            me[i * F + RE] = left + self.lat[i];
        }
        for (o, &x) in out.iter_mut().zip(me.iter()) {
            if !(-LIMIT..=LIMIT).contains(&x) {
                return None;
            }
            *o = x as i64;
        }
        Some(())
    }

    /// Every term of every maximum of a full packet whose record is `me`, into `out`
    /// (7 per hop, `NO` where there is none), in a fixed order.
    fn all_terms(&self, me: &[i64], prev: &[i64], credit: &[i64], out: &mut Vec<i128>) {
        out.clear();
        let wide: Vec<i128> = me.iter().map(|&x| x as i128).collect();
        let mut t = [NO; 3];
        for i in 0..self.h {
            self.terms(i, false, &wide, Some(prev), Some(credit), &mut t);
            out.extend_from_slice(&t);
            let st = wide[i * F + ST];
            out.push(st + self.ser[i][0]);
            out.push(if i == 0 {
                NO
            } else {
                wide[(i - 1) * F + EN] + self.lat[i - 1]
            });
            if i + 1 < self.h && self.fast[i] {
                out.push(wide[(i + 1) * F + ST] + self.ser[i][0]);
                out.push(wide[i * F + EN] + self.lat[i]);
            } else {
                out.push(NO);
                out.push(NO);
            }
        }
    }

    /// When the message is in, given its last packet's record.
    fn done(&self, me: &[i128]) -> i128 {
        me[(self.h - 1) * F + EN] + self.lat[self.h - 1]
    }
}

/// The groups of `all_terms`' terms that one maximum takes: per hop 3, 2, 2.
const GROUPS: [(usize, usize); 3] = [(0, 3), (3, 5), (5, 7)];

/// The route's hops are usable and the message has packets: its packet count and
/// last packet's wire bytes.
fn shape(cfg: &PacketConfig, hops: &[Hop], bytes: u64) -> Option<(u64, u32)> {
    if hops.iter().any(|x| !(x.cap > 0.0)) {
        return None;
    }
    let mtu = cfg.mtu as u64;
    if bytes == 0 {
        return Some((1, cfg.header)); // an empty message: one header-only packet
    }
    let n = bytes.div_ceil(mtu);
    let rest = bytes % mtu;
    Some((n, (if rest > 0 { rest } else { mtu }) as u32 + cfg.header))
}

fn fit(t: i128, exact: bool) -> Lone {
    match i64::try_from(t) {
        Ok(t) if t <= LIMIT as i64 && exact => Lone::Exact(t),
        Ok(t) if t <= LIMIT as i64 => Lone::Approx(t),
        _ => Lone::Never,
    }
}

/// The records of the last packets, by packet number.
struct Ring {
    len: u64,
    stride: usize,
    v: Vec<i64>,
}

impl Ring {
    fn at(&self, j: u64) -> &[i64] {
        let s = (j % self.len) as usize * self.stride;
        &self.v[s..s + self.stride]
    }
    fn at_mut(&mut self, j: u64) -> &mut [i64] {
        let s = (j % self.len) as usize * self.stride;
        &mut self.v[s..s + self.stride]
    }
}

/// A message of `bytes` alone on `hops` under `cfg`: from its first packet's start
/// to its last byte's arrival, as the packet fabric would move it (see the module
/// text). Cheap for any size: a few credit windows of packets per regime of the
/// pipeline.
///
/// ```
/// use netsteer_core::packet::{ideal::{lone_message, Hop, Lone}, PacketConfig};
/// // host -> switch -> host at 32 Gbit/s, 100 ns links, store-and-forward, 5000 B:
/// // the short last packet catches up with the one before and waits for it
/// let cfg = PacketConfig { cut_through: false, ..Default::default() };
/// let hop = Hop { cap: 4e9, lat_ps: 100_000 };
/// assert_eq!(lone_message(&cfg, &[hop, hop], 5000), Lone::Exact(2_088_000));
/// ```
pub fn lone_message(cfg: &PacketConfig, hops: &[Hop], bytes: u64) -> Lone {
    lone(cfg, hops, bytes, &mut vec![])
}

/// [`lone_message`], and its last packet's times per hop (start, end, credits
/// back, ps; empty when there are none): what the tests compare hop by hop.
#[doc(hidden)]
pub fn lone_message_last(cfg: &PacketConfig, hops: &[Hop], bytes: u64) -> (Lone, Vec<i64>) {
    let mut last = vec![];
    (lone(cfg, hops, bytes, &mut last), last)
}

/// The packets of a message of `bytes` on `hops` and the recurrence's constants, or
/// its answer at once: no time (nothing to send), or never (a hop that carries nothing).
fn prepare(cfg: &PacketConfig, hops: &[Hop], bytes: u64) -> Result<(u64, Line), Lone> {
    if hops.is_empty() {
        return Err(Lone::Exact(0));
    }
    let Some((n, last_wire)) = shape(cfg, hops, bytes) else {
        return Err(Lone::Never);
    };
    Ok((n, Line::new(cfg, hops, last_wire)))
}

fn lone(cfg: &PacketConfig, hops: &[Hop], bytes: u64, last_times: &mut Vec<i64>) -> Lone {
    let (n, line) = match prepare(cfg, hops, bytes) {
        Ok(x) => x,
        Err(at_once) => return at_once,
    };
    let (h, w) = (line.h, line.lag[0]);
    let stride = F * h;
    // packets before the last: 0 .. full - 1
    let full = n - 1;
    // the period looked for: every cycle of the recurrence spans 1 packet (an
    // output busy) or W (a credit loop), or is made of those, so the pipeline's
    // regimes repeat every W packets
    let p = w;
    let watch = w <= MAX_WATCHED_WINDOW && full > w + 2 * p;
    let max_packets = if watch {
        (BUDGET / h as u64).max(16 * (w + 2 * p + 2))
    } else {
        BUDGET / h as u64
    };
    // the records kept: enough for the last packet's credits (W + 1 back) and, when
    // watching, two periods more
    let ring_len = if watch { w + 2 * p + 2 } else { w + 2 }
        .min(full + 1)
        .min(max_packets + 2);
    let mut ring = Ring {
        len: ring_len,
        stride,
        v: vec![0; ring_len as usize * stride],
    };
    let mut me = vec![0i128; stride];
    let mut out = vec![0i64; stride];
    // records from `valid` on are known (a jump leaves the ones before unknown)
    let mut valid = 0u64;
    // packets in a row, up to the last one, each of whose record is the one p
    // before plus the same shift as that one's from the one 2p before
    let mut run = 0u64;
    let mut next_try = 0u64;
    let (mut t0, mut t1) = (Vec::new(), Vec::new());
    let mut simulated = 0u64;
    let mut k = 0u64;
    while k < full {
        if simulated >= max_packets {
            // out of budget (a buffer too large to watch, or a pipeline still
            // changing): the last packet from the last packets' pace, unproven
            let q = p.min(k - 1 - valid).max(1);
            let e = (h - 1) * F + EN;
            let (a, b) = (ring.at(k - 1)[e] as i128, ring.at(k - 1 - q)[e] as i128);
            let pace = (a - b) / q as i128;
            let t = a + (full + 1 - k) as i128 * pace + line.lat[h - 1];
            return match fit(t, false) {
                Lone::Exact(t) => Lone::Approx(t),
                x => x,
            };
        }
        {
            let prev = (k > 0).then(|| ring.at(k - 1));
            let credit = (k >= w).then(|| ring.at(k - w));
            if line
                .packet(k == 0, false, prev, credit, &mut me, &mut out)
                .is_none()
            {
                return Lone::Never;
            }
        }
        ring.at_mut(k).copy_from_slice(&out);
        simulated += 1;
        if watch && k >= valid + 2 * p {
            let (a, b, c) = (ring.at(k), ring.at(k - p), ring.at(k - 2 * p));
            let lin = (0..stride).all(|x| a[x] as i128 - 2 * b[x] as i128 + c[x] as i128 == 0);
            run = if lin { run + 1 } else { 0 };
        }
        if watch && run > w && k >= next_try && k > valid + 2 * p + w && k + 1 < full {
            // the state after k (the last W + 1 records) is the one after k - p plus
            // D, as that one is the one after k - 2p plus D: if the last two periods
            // took their maxima from the same terms, the pipeline goes on adding D
            // per period until a maximum's winner loses its lead
            next_try = k + p;
            let mut periods = u64::MAX;
            'period: for j in k + 1 - p..=k {
                line.all_terms(ring.at(j), ring.at(j - 1), ring.at(j - w), &mut t0);
                line.all_terms(
                    ring.at(j - p),
                    ring.at(j - p - 1),
                    ring.at(j - p - w),
                    &mut t1,
                );
                for i in 0..h {
                    for &(g0, g1) in &GROUPS {
                        let g = &t0[i * 7 + g0..i * 7 + g1];
                        let g_before = &t1[i * 7 + g0..i * 7 + g1];
                        let win = argmax(g);
                        if win != argmax(g_before) {
                            periods = 0;
                            break 'period;
                        }
                        for x in 0..g.len() {
                            if x == win || g[x] == NO {
                                continue;
                            }
                            let lead = g[win] - g[x];
                            let slope = lead - (g_before[win] - g_before[x]);
                            if slope < 0 {
                                periods = periods.min((lead / -slope) as u64);
                            }
                        }
                    }
                }
            }
            // no further than the last full packet
            let m = periods.min((full - 1 - k) / p);
            if m > 0 {
                let mut moved = vec![0i64; (w as usize + 1) * stride];
                for (r, j) in (k - w..=k).enumerate() {
                    let (a, b) = (ring.at(j), ring.at(j - p));
                    for x in 0..stride {
                        let v = a[x] as i128 + m as i128 * (a[x] as i128 - b[x] as i128);
                        if !(-LIMIT..=LIMIT).contains(&v) {
                            return Lone::Never;
                        }
                        moved[r * stride + x] = v as i64;
                    }
                }
                k += m * p;
                for (r, j) in (k - w..=k).enumerate() {
                    ring.at_mut(j)
                        .copy_from_slice(&moved[r * stride..(r + 1) * stride]);
                }
                valid = k - w;
                run = 0;
                next_try = 0;
            }
        }
        k += 1;
    }
    let last = full;
    let lag = line.lag[1];
    let prev = (last > 0).then(|| ring.at(last - 1));
    let credit = (last >= lag).then(|| ring.at(last - lag));
    if line
        .packet(last == 0, true, prev, credit, &mut me, &mut out)
        .is_none()
    {
        return Lone::Never;
    }
    last_times.extend_from_slice(&out);
    fit(line.done(&me), true)
}

/// The first of the largest terms (`NO` ones never win but when all are `NO`).
fn argmax(g: &[i128]) -> usize {
    let mut best = 0;
    for (x, &v) in g.iter().enumerate() {
        if v > g[best] {
            best = x;
        }
    }
    best
}

/// The same, packet by packet (O(packets) time, O(buffer) memory): what
/// [`lone_message`]'s jumps are tested against.
pub fn lone_message_direct(cfg: &PacketConfig, hops: &[Hop], bytes: u64) -> Lone {
    lone_direct(cfg, hops, bytes, &mut vec![])
}

/// [`lone_message_direct`], and its last packet's times per hop.
#[doc(hidden)]
pub fn lone_message_direct_last(cfg: &PacketConfig, hops: &[Hop], bytes: u64) -> (Lone, Vec<i64>) {
    let mut last = vec![];
    (lone_direct(cfg, hops, bytes, &mut last), last)
}

fn lone_direct(cfg: &PacketConfig, hops: &[Hop], bytes: u64, last_times: &mut Vec<i64>) -> Lone {
    let (n, line) = match prepare(cfg, hops, bytes) {
        Ok(x) => x,
        Err(at_once) => return at_once,
    };
    let stride = F * line.h;
    // the last W + 2 packets (the last one waits for at most W + 1 back)
    let len = (line.lag[0] + 2).min(n + 1);
    let mut ring = Ring {
        len,
        stride,
        v: vec![0; len as usize * stride],
    };
    let mut me = vec![0i128; stride];
    let mut out = vec![0i64; stride];
    for k in 0..n {
        let last = k + 1 == n;
        let lag = line.lag[last as usize];
        let prev = (k > 0).then(|| ring.at(k - 1));
        let credit = (k >= lag).then(|| ring.at(k - lag));
        if line
            .packet(k == 0, last, prev, credit, &mut me, &mut out)
            .is_none()
        {
            return Lone::Never;
        }
        ring.at_mut(k).copy_from_slice(&out);
    }
    last_times.extend_from_slice(&out);
    fit(line.done(&me), true)
}
