//! Packet-level physics: the fabric as InfiniBand switches and HCAs move bytes.
//!
//! * A message (an active flow) is cut into packets of at most `mtu` payload bytes,
//!   each with `header` bytes on the wire.
//! * A **host** keeps one send queue per connection (flow) and serves them
//!   round-robin, packet by packet, through its port's VL arbiter.
//! * Every channel (a link direction) has, at its far end, an **input buffer per
//!   VL**: a FIFO of `buffer` bytes. A sender may start a packet on a VL only with
//!   credits for it (lossless, credit-based flow control, credits in 64-byte
//!   blocks); the credits come back one link latency after the packet has left
//!   that buffer.
//! * A **switch** forwards the head packet of each input buffer through a crossbar
//!   to the output its path names; only the head may go (head-of-line blocking),
//!   and an input sends one packet at a time. **Cut-through** by default: a packet
//!   may leave `switch_latency` after its head arrived (never finishing before its
//!   tail is in); store-and-forward waits for the tail.
//! * Each **output port** arbitrates among VLs with InfiniBand's VL arbitration
//!   ([`vlarb`]: high and low tables, high limit) and, within a VL, round-robin
//!   among the inputs (or send queues) that have a packet for it.
//! * The destination host drains its buffer at line rate.
//! * A channel whose link is **down** takes no packet: a packet that comes to the
//!   head of its input buffer wanting it is dropped there (its buffer space and
//!   credits go back as if it had left), and a flow whose path crosses a link that
//!   is down sends nothing, as at flow level. A packet whose transmission started
//!   before the link went down finishes (links go down between packets). The
//!   sender, InfiniBand's RC transport, goes back N: its destination takes packets
//!   in order (PSN by PSN) and throws away those behind a lost one until it comes
//!   in again; `rc_timeout` after its last progress, the sender sends again from
//!   the first packet not taken, on the path in force then. Once a sender has lost
//!   a packet its timer runs whenever packets are not yet taken, as RC's does.
//!   Packets reordered otherwise (a re-route's) are taken in any order (RC would
//!   NAK them: not modelled).
//!
//! Time inside is integer picoseconds (a 2 KiB packet at 4 GB/s is 519.5 ns), so
//! serialisation never drifts; flows finish at the ceil of their last byte's
//! arrival in ns. The path a flow takes is the engine's (the same routing tables
//! as for flows); a re-routed flow's packets in flight keep their old path.
//!
//! Measured on the way: each port's and VL's `PortXmitWait` (time it had a packet
//! but no credits to send it), buffer occupancy (sampled, and its peak), bytes per
//! VL, and per message its latency and the part of it spent queueing (its time
//! minus what it would take alone on an idle fabric).

pub mod config;
pub mod ideal;
pub mod vlarb;

use std::any::Any;
use std::collections::{BinaryHeap, VecDeque};

use crate::engine::Stats;
use crate::physics::{Net, Physics};
use crate::Ns;
pub use config::{credit_bytes, PacketConfig};
use vlarb::{ArbState, VlArb};

const NONE: u32 = u32::MAX;
// a requester at an output is an input buffer, or (this bit set) a host's send queue
const HOST: u32 = 1 << 31;

const TX_DONE: u8 = 0;
const ARRIVE: u8 = 1;
const DELIVER: u8 = 2;
const CREDIT: u8 = 3;
// a flow's retransmission timer (`a`: the flow, `b`: its version)
const TIMER: u8 = 4;
// a packet read out of input buffer `a` into a slower output
const READ_DONE: u8 = 5;
// a destination's NAK reaches flow `a`'s sender (`b`: the flow's version)
const NAK: u8 = 6;
const VER_MASK: u32 = (1 << 30) - 1;
// a flow with no packet lost and not yet taken
const NO_HOLE: u64 = u64::MAX;

/// An event in picoseconds. Events are ordered by time, then kind, then their
/// fields: a total order (two events equal in all are the same event), so runs are
/// deterministic. The heap holds them packed in 16 bytes (kind 3 bits, `a` 31,
/// `b` 30): sifting is most of the packet physics' time.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    t: i64,
    kind: u8,
    a: u32,
    b: u32,
}

impl Ev {
    fn pack(self) -> (i64, u64) {
        debug_assert!(self.a < 1 << 31 && self.b < 1 << 30);
        (
            self.t,
            (self.kind as u64) << 61 | (self.a as u64) << 30 | self.b as u64,
        )
    }
    fn unpack((t, k): (i64, u64)) -> Ev {
        Ev {
            t,
            kind: (k >> 61) as u8,
            a: ((k >> 30) & ((1 << 31) - 1)) as u32,
            b: (k & ((1 << 30) - 1)) as u32,
        }
    }
}

#[derive(Clone, Copy)]
struct Pkt {
    flow: u32,
    ver: u32,
    // the packet's own path: a range of the route arena, and the next hop in it
    route: u32,
    len: u16,
    hop: u16,
    vl: u8,
    wire: u32,
    payload: u32,
    // its packet sequence number in the flow, modulo 2^32 (see `abs_psn`)
    psn: u32,
    // when its tail is (or will be) in at the node it is at
    tail: i64,
}

// a packet is 40 bytes: the PSN fits in what was padding
const _: () = assert!(std::mem::size_of::<Pkt>() <= 40);

/// Every byte of flow `fl` taken in order at its destination (an empty message:
/// its header-only packet).
fn all_taken(fl: &PFlow) -> bool {
    fl.delivered >= fl.bytes && fl.expected > 0
}

/// The PSN `psn` (modulo 2^32) stands for near `expected`: packets of a flow in
/// the network span far fewer than 2^31 PSNs.
fn abs_psn(expected: u64, psn: u32) -> u64 {
    let d = psn.wrapping_sub(expected as u32) as i32 as i64;
    (expected as i64 + d).max(0) as u64
}

#[derive(Clone, Copy)]
struct PFlow {
    route: u32,
    route_len: u16,
    room: u16,
    vl: u8,
    active: bool,
    queued: bool,
    // a message of 0 bytes whose header-only packet is still to be sent (InfiniBand
    // sends one packet, header only, for an empty message)
    hdr: bool,
    // stopped before every byte was taken (a timed bulk flow's duration ended): its
    // packets still in the network are thrown away at the head of the buffer they
    // wait in, and take no more bandwidth
    stopped: bool,
    ver: u32,
    left: u64,
    bytes: u64,
    delivered: u64,
    in_flight: u32,
    // the destination's next PSN in order, and when it last advanced (the sender's
    // transport timer restarts there: ACKs' way back is not modelled)
    expected: u64,
    progress_ps: i64,
    // the flow has a `Recovery` record
    rec: bool,
    start_ps: i64,
    ideal_ps: i64,
    done_ps: i64,
}

impl Default for PFlow {
    /// A flow the physics never started (no bytes, or no hops: the engine finishes
    /// it at once) has no first packet, no time alone and no last packet: -1.
    fn default() -> Self {
        PFlow {
            route: 0,
            route_len: 0,
            room: 0,
            vl: 0,
            active: false,
            queued: false,
            hdr: false,
            stopped: false,
            ver: 0,
            left: 0,
            bytes: 0,
            delivered: 0,
            in_flight: 0,
            expected: 0,
            progress_ps: 0,
            rec: false,
            start_ps: -1,
            ideal_ps: -1,
            done_ps: -1,
        }
    }
}

/// What a flow that lost packets, or got them out of order, needs besides.
#[derive(Default)]
struct Recovery {
    // the lowest PSN lost and not taken since: the destination throws away what
    // comes after it (go-back-N), NO_HOLE when none
    hole: u64,
    // one past the highest PSN ever sent: a PSN below it is a retransmission
    high: u64,
    // the retransmission timer is running
    armed: bool,
    // the destination has NAKed the hole (once per hole, as RC's responder does)
    naked: bool,
    // PSN ranges [a, b) above `expected` taken out of order (a re-route's reordering)
    ooo: Vec<(u64, u64)>,
    // its packets dropped, and sent again
    lost: u64,
    resent: u64,
}

impl Recovery {
    fn has(&self, p: u64) -> bool {
        self.ooo.iter().any(|&(a, b)| a <= p && p < b)
    }
    /// Take `p` (above `expected`, not yet taken) into the out-of-order ranges.
    fn insert(&mut self, p: u64) {
        let i = self.ooo.partition_point(|&(_, b)| b < p);
        if i < self.ooo.len() && self.ooo[i].1 == p {
            self.ooo[i].1 = p + 1;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == p + 1 {
                self.ooo[i].1 = self.ooo[i + 1].1;
                self.ooo.remove(i + 1);
            }
        } else if i < self.ooo.len() && self.ooo[i].0 == p + 1 {
            self.ooo[i].0 = p;
        } else {
            self.ooo.insert(i, (p, p + 1));
        }
    }
}

/// The packet physics (see the module text).
pub struct Packets {
    cfg: PacketConfig,
    arb: VlArb,
    nv: usize,
    heap: BinaryHeap<std::cmp::Reverse<(i64, u64)>>,
    now: i64,
    pkts: Vec<Pkt>,
    free_pkts: Vec<u32>,
    flows: Vec<PFlow>,
    routes: Vec<u32>,
    // per channel
    busy: Vec<bool>,
    tx_from: Vec<u32>,
    arb_state: Vec<ArbState>,
    chan_bytes: Vec<f64>,
    // the packet being sent on each channel: its start, end (ps) and wire bytes; the
    // port counters count its bytes as they are serialised, evenly over that span
    tx_span: Vec<(i64, i64, u32)>,
    // per channel and VL (index c * nv + v)
    credits: Vec<i64>,
    // requesters waiting at output c on VL v, and the one granted last: grants go
    // round-robin by id from it (an arbiter's pointer over its inputs), so the order
    // requests came in within an instant never matters
    req: Vec<Vec<u32>>,
    last: Vec<u32>,
    fifo: Vec<VecDeque<u32>>,
    reading: Vec<bool>,
    requested: Vec<bool>,
    occ: Vec<u32>,
    peak: Vec<u32>,
    wait_since: Vec<i64>,
    xmit_wait: Vec<i64>,
    vl_bytes: Vec<f64>,
    // outputs to arbitrate once every event of the instant is in (see `kick`)
    kicked: Vec<u32>,
    is_kicked: Vec<bool>,
    // sampled occupancy: one row of channels x VLs per engine sample
    occ_samples: Vec<u32>,
    packet_hops: u64,
    packets: u64,
    // per channel and VL: packets dropped because the channel was down
    // (PortXmitDiscards)
    discards: Vec<u64>,
    // per run: packets dropped, sent again, timeouts that fired, packets the
    // destinations threw away (duplicates, or behind a lost one)
    dropped: u64,
    retransmitted: u64,
    timeouts: u64,
    naks: u64,
    discarded: u64,
    stopped_discards: u64,
    // flows stopped in this instant (flow, version), purged at its settle
    to_purge: Vec<(u32, u32)>,
    rec: std::collections::HashMap<u32, Recovery>,
    // capacity and latency as last seen (the engine's Net), for ser times; a
    // channel is down when its capacity is 0 and its capacity when up is not
    cap: Vec<f64>,
    base: Vec<f64>,
    n_down: usize,
    lat_ps: Vec<i64>,
}

impl Packets {
    /// A packet fabric of `n_channels` channels with `cfg` (checked: see
    /// [`PacketConfig::check`]).
    pub fn new(n_channels: usize, cfg: PacketConfig) -> Result<Self, (&'static str, String)> {
        cfg.check()?;
        let nv = cfg.vls as usize;
        let k = n_channels * nv;
        Ok(Packets {
            arb: VlArb::new(&cfg.vlarb_high, &cfg.vlarb_low, cfg.high_limit),
            nv,
            heap: BinaryHeap::new(),
            now: 0,
            pkts: vec![],
            free_pkts: vec![],
            flows: vec![],
            routes: vec![],
            busy: vec![false; n_channels],
            tx_from: vec![NONE; n_channels],
            arb_state: vec![ArbState::default(); n_channels],
            chan_bytes: vec![0.0; n_channels],
            tx_span: vec![(0, 0, 0); n_channels],
            credits: vec![cfg.buffer as i64; k],
            req: vec![Vec::new(); k],
            last: vec![0; k],
            fifo: vec![VecDeque::new(); k],
            reading: vec![false; k],
            requested: vec![false; k],
            occ: vec![0; k],
            peak: vec![0; k],
            wait_since: vec![-1; k],
            xmit_wait: vec![0; k],
            vl_bytes: vec![0.0; k],
            kicked: vec![],
            is_kicked: vec![false; n_channels],
            occ_samples: vec![],
            packet_hops: 0,
            packets: 0,
            discards: vec![0; k],
            dropped: 0,
            retransmitted: 0,
            timeouts: 0,
            naks: 0,
            discarded: 0,
            stopped_discards: 0,
            to_purge: vec![],
            rec: std::collections::HashMap::new(),
            cap: vec![],
            base: vec![],
            n_down: 0,
            lat_ps: vec![],
            cfg,
        })
    }

    pub fn config(&self) -> &PacketConfig {
        &self.cfg
    }
    pub fn vls(&self) -> usize {
        self.nv
    }
    /// Per channel and VL (`c * vls + v`): ps a packet waited for credits.
    pub fn xmit_wait_ps(&self) -> &[i64] {
        &self.xmit_wait
    }
    /// Per channel and VL: the most bytes its far-end input buffer held.
    pub fn peak_occupancy(&self) -> &[u32] {
        &self.peak
    }
    /// Per channel and VL: wire bytes sent.
    pub fn vl_bytes(&self) -> &[f64] {
        &self.vl_bytes
    }
    /// Per channel and VL: the credits its sender holds now, bytes (`buffer` when
    /// the input buffer at its far end is empty and no credit is on its way back).
    pub fn credits(&self) -> &[i64] {
        &self.credits
    }
    /// Occupancy samples, one row of channels x VLs per engine counter sample.
    pub fn occupancy_samples(&self) -> &[u32] {
        &self.occ_samples
    }
    /// Packets injected so far (retransmissions included).
    pub fn packets(&self) -> u64 {
        self.packets
    }
    /// Per channel and VL (`c * vls + v`): packets dropped there because the
    /// channel was down (InfiniBand's PortXmitDiscards).
    pub fn xmit_discards(&self) -> &[u64] {
        &self.discards
    }
    /// Packets dropped at ports whose link was down.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    /// Packets sent again after a retransmission timeout (go-back-N).
    pub fn retransmitted(&self) -> u64 {
        self.retransmitted
    }
    /// Retransmission timeouts that fired (each sent a flow back to its first
    /// packet not taken).
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// NAKs that sent a flow back to the packet its destination lacks.
    pub fn naks(&self) -> u64 {
        self.naks
    }
    /// Packets that reached their destination and were thrown away: duplicates,
    /// or behind a lost packet (RC takes packets in order).
    pub fn discarded(&self) -> u64 {
        self.discarded
    }
    /// Packets of flows stopped before their end (timed bulk flows) thrown away in
    /// the network after the stop, at the head of the buffer they waited in.
    pub fn stopped_discards(&self) -> u64 {
        self.stopped_discards
    }
    /// Per flow: its packets dropped, and sent again (a streamed flow's slot: its
    /// last message's).
    pub fn flow_losses(&self, n: usize) -> (Vec<u64>, Vec<u64>) {
        let get = |f: usize| match self.flows.get(f) {
            Some(p) if p.rec => {
                let r = &self.rec[&(f as u32)];
                (r.lost, r.resent)
            }
            _ => (0, 0),
        };
        (0..n).map(get).unzip()
    }
    /// Per flow: (start, done, ideal) in ps, -1 where it never got there (ideal: its
    /// time alone on its route, -1 where it has none; see [`ideal::lone_message`]).
    pub fn message_times(&self, n: usize) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        let get = |f: usize, pick: fn(&PFlow) -> i64| self.flows.get(f).map_or(-1, pick);
        (
            (0..n).map(|f| get(f, |p| p.start_ps)).collect(),
            (0..n).map(|f| get(f, |p| p.done_ps)).collect(),
            (0..n).map(|f| get(f, |p| p.ideal_ps)).collect(),
        )
    }

    fn push(&mut self, t: i64, kind: u8, a: u32, b: u32) {
        self.heap
            .push(std::cmp::Reverse(Ev { t, kind, a, b }.pack()));
    }

    fn sync_net(&mut self, net: &Net) {
        if self.cap.len() != net.capacity.len() {
            self.lat_ps = net.latency.iter().map(|&l| l * 1000).collect();
        }
        self.cap.clear();
        self.cap.extend_from_slice(net.capacity);
        self.base.clear();
        self.base.extend_from_slice(net.base_capacity);
        self.n_down = (0..self.cap.len()).filter(|&c| self.is_down(c)).count();
    }

    /// Channel `c` carries nothing: its link is down, or it is a path to nowhere (the
    /// hybrid fabric's, where no rule matches). A packet that wants it is dropped,
    /// as a switch drops what it cannot forward; held, it would block its input
    /// buffer, and every packet behind it, for good.
    fn is_down(&self, c: usize) -> bool {
        !(self.cap[c] > 0.0)
    }

    /// Every channel of flow `f`'s path is up.
    fn path_up(&self, f: usize) -> bool {
        let fl = &self.flows[f];
        self.n_down == 0
            || self.routes[fl.route as usize..fl.route as usize + fl.route_len as usize]
                .iter()
                .all(|&c| !self.is_down(c as usize))
    }

    /// The PSN of flow `f`'s next packet.
    fn next_psn(&self, f: usize) -> u64 {
        let fl = &self.flows[f];
        if fl.bytes == 0 {
            return u64::from(!fl.hdr); // one header-only packet, PSN 0
        }
        (fl.bytes - fl.left).div_ceil(self.cfg.mtu as u64)
    }

    fn recovery(&mut self, f: usize) -> &mut Recovery {
        if !self.flows[f].rec {
            self.flows[f].rec = true;
            let high = self.next_psn(f);
            self.rec.insert(
                f as u32,
                Recovery {
                    hole: NO_HOLE,
                    high,
                    ..Default::default()
                },
            );
        }
        self.rec
            .get_mut(&(f as u32))
            .expect("a flow marked rec has a record")
    }

    fn ser_ps(&self, c: usize, wire: u32) -> i64 {
        ideal::ser_ps(self.cap[c], wire)
    }

    fn wire_of(&self, payload: u64) -> u32 {
        payload.min(self.cfg.mtu as u64) as u32 + self.cfg.header
    }

    /// Wire bytes of the packet a requester would send next.
    fn next_wire(&self, r: u32) -> u32 {
        if r & HOST != 0 {
            self.wire_of(self.flows[(r & !HOST) as usize].left)
        } else {
            self.pkts[self.fifo[r as usize][0] as usize].wire
        }
    }

    /// The time a message of `bytes` takes alone on `route` from its first packet's
    /// start to its last byte's arrival, its links up, with this fabric's rules
    /// (pipelining, cut-through or not, links of other rates, credits): exact, and
    /// cheap for any size ([`ideal::lone_message`]). -1 when there is none: beyond
    /// the clock (a bulk flow's nominal size), or a channel of no capacity on the
    /// route (a path to nowhere, where a lone flow never arrives).
    fn ideal(&self, route: &[u32], bytes: u64) -> i64 {
        let hops: Vec<ideal::Hop> = route
            .iter()
            .map(|&c| ideal::Hop {
                cap: self.base[c as usize],
                lat_ps: self.lat_ps[c as usize],
            })
            .collect();
        ideal::lone_message(&self.cfg, &hops, bytes).ps()
    }

    fn copy_route(&mut self, f: usize, path: &[u32]) {
        let fl = self.flows[f];
        // the room is free again once none of its packets is in flight
        if fl.in_flight == 0 && path.len() <= fl.room as usize && fl.room > 0 {
            let s = fl.route as usize;
            self.routes[s..s + path.len()].copy_from_slice(path);
        } else {
            self.flows[f].route = self.routes.len() as u32;
            self.flows[f].room = path.len() as u16;
            self.routes.extend_from_slice(path);
        }
        self.flows[f].route_len = path.len() as u16;
    }

    fn enqueue_host(&mut self, f: usize) {
        let fl = &self.flows[f];
        if fl.queued || (fl.left == 0 && !fl.hdr) || fl.route_len == 0 || fl.vl as usize >= self.nv
        {
            return;
        }
        if !self.path_up(f) {
            return; // it waits for its path, as a flow does at flow level
        }
        let first = self.routes[fl.route as usize] as usize;
        let k = first * self.nv + fl.vl as usize;
        self.req[k].push(HOST | f as u32);
        self.flows[f].queued = true;
        self.kick(first);
    }

    fn dequeue_host(&mut self, f: usize) {
        if !self.flows[f].queued {
            return;
        }
        let fl = self.flows[f];
        let first = self.routes[fl.route as usize] as usize;
        let k = first * self.nv + fl.vl as usize;
        if let Some(i) = self.req[k].iter().position(|&r| r == HOST | f as u32) {
            self.req[k].swap_remove(i);
        }
        self.flows[f].queued = false;
    }

    /// The head packet of input buffer `b` asks for its next output; a head whose
    /// output is down is dropped, and the next one asks.
    fn request_front(&mut self, b: usize) {
        if self.reading[b] || self.requested[b] {
            return;
        }
        while let Some(&p) = self.fifo[b].front() {
            let pk = self.pkts[p as usize];
            let fl = &self.flows[pk.flow as usize];
            if fl.stopped && fl.ver == pk.ver {
                // its flow was stopped: the packet goes no further
                self.pop_head(b);
                self.flows[pk.flow as usize].in_flight -= 1;
                self.stopped_discards += 1;
                self.free_pkts.push(p);
                continue;
            }
            let out = self.routes[(pk.route + pk.hop as u32) as usize] as usize;
            if self.n_down > 0 && self.is_down(out) {
                self.drop_head(b, out);
                continue;
            }
            self.req[out * self.nv + pk.vl as usize].push(b as u32);
            self.requested[b] = true;
            self.kick(out);
            return;
        }
    }

    /// Drop the head packet of input buffer `b`, which wants output `out` (down):
    /// its buffer space is free and its credits go back upstream, as if it had left.
    fn drop_head(&mut self, b: usize, out: usize) {
        let p = self.pop_head(b);
        let pk = self.pkts[p as usize];
        self.discards[out * self.nv + pk.vl as usize] += 1;
        self.dropped += 1;
        self.free_pkts.push(p);
        let f = pk.flow as usize;
        if self.flows[f].ver == pk.ver {
            self.flows[f].in_flight -= 1;
            self.recovery(f).lost += 1;
            if self.flows[f].active {
                self.lost(f, pk.psn);
            }
        }
    }

    /// Flow `f` lost its packet `psn`: the destination will throw away what comes
    /// after it, and the sender's timer runs.
    fn lost(&mut self, f: usize, psn: u32) {
        let fl = self.flows[f];
        let p = abs_psn(fl.expected, psn);
        let due = self.now.max(fl.progress_ps + self.cfg.rc_timeout * 1000);
        let r = self.recovery(f);
        if p < fl.expected || r.has(p) {
            return; // an old copy of a packet the destination has
        }
        r.hole = r.hole.min(p);
        if !r.armed {
            r.armed = true;
            self.push(due, TIMER, f as u32, fl.ver & VER_MASK);
        }
    }

    /// Flow `f`'s packet `psn` with `payload` bytes reached its destination: taken
    /// in order, out of order after a re-route, or thrown away.
    fn receive(&mut self, f: usize, psn: u32, payload: u32, done: &mut Vec<u32>) {
        let fl = self.flows[f];
        let p = abs_psn(fl.expected, psn);
        if p == fl.expected && !fl.rec {
            // the usual case: the next packet in order
            let fl = &mut self.flows[f];
            fl.expected += 1;
            fl.progress_ps = self.now;
        } else {
            let now = self.now;
            let r = self.recovery(f);
            if p < fl.expected || r.has(p) || p > r.hole {
                // a duplicate, or behind a lost packet: RC takes packets in order;
                // the first behind a hole has the destination NAK it (PSN sequence
                // error), and the sender goes back on the NAK's arrival, about the
                // path's latency later (the NAK's way back is not modelled)
                let nak = p > r.hole && !r.naked;
                r.naked |= nak;
                self.discarded += 1;
                if nak {
                    let back: i64 = self.routes
                        [fl.route as usize..fl.route as usize + fl.route_len as usize]
                        .iter()
                        .map(|&c| self.lat_ps[c as usize])
                        .sum();
                    self.push(now + back, NAK, f as u32, fl.ver & VER_MASK);
                }
                return;
            }
            if p == r.hole {
                r.hole = NO_HOLE;
                r.naked = false;
            }
            let mut expected = fl.expected;
            if p == expected {
                expected += 1;
                while let Some(&(a, b)) = r.ooo.first() {
                    if a != expected {
                        break;
                    }
                    expected = b;
                    r.ooo.remove(0);
                }
            } else {
                r.insert(p);
            }
            let fl = &mut self.flows[f];
            if expected > fl.expected {
                fl.expected = expected;
                fl.progress_ps = now;
            }
        }
        let fl = &mut self.flows[f];
        fl.delivered += payload as u64;
        debug_assert!(fl.delivered <= fl.bytes);
        if fl.delivered >= fl.bytes {
            fl.done_ps = self.now;
            done.push(f as u32);
        }
    }

    /// Flow `f`'s retransmission timer went off (`ver`: the flow's version then).
    fn timeout(&mut self, f: usize, ver: u32) {
        let fl = self.flows[f];
        if fl.ver & VER_MASK != ver || !fl.active || !fl.rec {
            return; // a former flow's, or the flow is over
        }
        let due = fl.progress_ps + self.cfg.rc_timeout * 1000;
        let next = self.next_psn(f);
        let now = self.now;
        let r = self.recovery(f);
        if !r.armed {
            return;
        }
        if due > now {
            // the destination took packets since: the timer restarted then
            self.push(due, TIMER, f as u32, ver);
            return;
        }
        r.armed = false;
        if fl.expected >= next || all_taken(&fl) {
            return; // nothing is owed
        }
        self.timeouts += 1;
        self.go_back(f);
    }

    /// A NAK for flow `f` (`ver`: the flow's version then) reached its sender.
    fn nak(&mut self, f: usize, ver: u32) {
        let fl = self.flows[f];
        if fl.ver & VER_MASK != ver || !fl.active || !fl.rec {
            return;
        }
        if fl.expected >= self.next_psn(f) || all_taken(&fl) {
            return; // the hole was filled meanwhile
        }
        self.naks += 1;
        self.go_back(f);
    }

    /// Go back N: send flow `f` again from the first packet its destination has not
    /// taken.
    fn go_back(&mut self, f: usize) {
        let next = self.next_psn(f);
        let r = self.recovery(f);
        r.high = r.high.max(next);
        let mtu = self.cfg.mtu as u64;
        let fl = &mut self.flows[f];
        fl.left = fl.bytes - (fl.expected * mtu).min(fl.bytes);
        fl.hdr = fl.bytes == 0 && fl.expected == 0;
        fl.progress_ps = self.now;
        self.enqueue_host(f);
    }

    /// The requester output and VL `k` grants next: the first id after the last
    /// one granted, cyclically.
    fn next_grant(&self, k: usize) -> Option<u32> {
        let last = self.last[k];
        self.req[k]
            .iter()
            .copied()
            .min_by_key(|&r| (r & !HOST).wrapping_sub(last).wrapping_sub(1) & !HOST)
    }

    /// Output `c` may be able to send: it is arbitrated once every event of this
    /// picosecond has been handled, so a packet arriving in the very instant an
    /// output frees up competes with those already waiting, whatever the order the
    /// two events are handled in (a switch arbitrates all its requests at once).
    fn kick(&mut self, c: usize) {
        if !self.is_kicked[c] {
            self.is_kicked[c] = true;
            self.kicked.push(c as u32);
        }
    }

    /// Arbitrate every kicked output, in the order they were kicked.
    fn flush(&mut self) {
        let mut i = 0;
        while i < self.kicked.len() {
            let c = self.kicked[i] as usize;
            self.is_kicked[c] = false;
            self.try_send(c);
            i += 1;
        }
        self.kicked.clear();
    }

    /// Start the next packet on output channel `c` if it is idle and a VL can send.
    fn try_send(&mut self, c: usize) {
        if self.busy[c] || !(self.cap[c] > 0.0) {
            return;
        }
        let nv = self.nv;
        let now = self.now;
        let mut ready = 0u16;
        for v in 0..nv {
            let k = c * nv + v;
            let Some(r) = self.next_grant(k) else {
                continue;
            };
            if self.credits[k] >= credit_bytes(self.next_wire(r)) as i64 {
                ready |= 1 << v;
                if self.wait_since[k] >= 0 {
                    self.xmit_wait[k] += now - self.wait_since[k];
                    self.wait_since[k] = -1;
                }
            } else if self.wait_since[k] < 0 {
                self.wait_since[k] = now;
            }
        }
        if ready == 0 {
            return;
        }
        let mut st = self.arb_state[c];
        let Some((v, high)) = self.arb.pick(&mut st, ready) else {
            self.arb_state[c] = st;
            return;
        };
        let k = c * nv + v as usize;
        let r = self.next_grant(k).expect("a ready VL has a requester");
        let i = self.req[k]
            .iter()
            .position(|&x| x == r)
            .expect("granted from the list");
        self.req[k].swap_remove(i);
        self.last[k] = r & !HOST;
        let p = if r & HOST != 0 {
            let f = (r & !HOST) as usize;
            let fl = self.flows[f];
            let payload = fl.left.min(self.cfg.mtu as u64) as u32;
            let psn = self.next_psn(f);
            if fl.rec {
                let due = now.max(fl.progress_ps + self.cfg.rc_timeout * 1000);
                let r = self.recovery(f);
                let resent = psn < r.high;
                if resent {
                    r.resent += 1;
                } else {
                    r.high = psn + 1;
                }
                // a sender that has lost packets keeps its timer running while any
                // are not acknowledged, as RC's does: packets the destination threw
                // away behind a loss that was then filled are owed too
                let arm = r.lost > 0 && !r.armed;
                r.armed |= arm;
                self.retransmitted += resent as u64;
                if arm {
                    self.push(due, TIMER, f as u32, fl.ver & VER_MASK);
                }
            }
            self.flows[f].left -= payload as u64;
            self.flows[f].hdr = false;
            self.flows[f].in_flight += 1;
            if self.flows[f].left > 0 {
                self.req[k].push(r); // round-robin among the host's send queues
            } else {
                self.flows[f].queued = false;
            }
            let pk = Pkt {
                flow: f as u32,
                ver: fl.ver,
                route: fl.route,
                len: fl.route_len,
                hop: 0,
                vl: v,
                wire: payload + self.cfg.header,
                payload,
                psn: psn as u32,
                tail: now,
            };
            self.packets += 1;
            self.tx_from[c] = NONE;
            match self.free_pkts.pop() {
                Some(i) => {
                    self.pkts[i as usize] = pk;
                    i
                }
                None => {
                    self.pkts.push(pk);
                    (self.pkts.len() - 1) as u32
                }
            }
        } else {
            let b = r as usize;
            self.requested[b] = false;
            self.reading[b] = true;
            self.tx_from[c] = b as u32;
            self.fifo[b][0]
        };
        let pk = self.pkts[p as usize];
        let cost = credit_bytes(pk.wire);
        self.credits[k] -= cost as i64;
        self.arb.charge(&mut st, high, pk.wire);
        self.arb_state[c] = st;
        let ser = self.ser_ps(c, pk.wire);
        let end = (now + ser).max(pk.tail);
        self.busy[c] = true;
        self.push(end, TX_DONE, c as u32, 0);
        let b = self.tx_from[c];
        if b != NONE && self.cap[b as usize / nv] > self.cap[c] {
            // a faster input into a slower output: the packet is read out of its
            // buffer at the input's rate (into the output's staging), so the input
            // can feed another output while this one sends
            let read = (now + self.ser_ps(b as usize / nv, pk.wire)).max(pk.tail);
            self.tx_from[c] = NONE;
            self.push(read, READ_DONE, b, 0);
        }
        self.chan_bytes[c] += pk.wire as f64;
        self.tx_span[c] = (now, end, pk.wire);
        self.vl_bytes[k] += pk.wire as f64;
        self.packet_hops += 1;
        let lat = self.lat_ps[c];
        let q = &mut self.pkts[p as usize];
        q.hop += 1;
        q.tail = end + lat;
        if q.hop == q.len {
            self.push(end + lat, DELIVER, p, 0);
        } else {
            let sw = self.cfg.switch_latency * 1000;
            // a packet goes on to a faster link only once its tail is in (it cannot
            // leave faster than it comes): store-and-forward there, cut-through or not
            let next = self.routes[(q.route + q.hop as u32) as usize] as usize;
            let at = if self.cfg.cut_through && self.cap[next] <= self.cap[c] {
                now + lat + sw
            } else {
                end + lat + sw
            };
            self.push(at, ARRIVE, p, 0);
        }
    }

    /// Take the head packet out of input buffer `b`: its space is free, and its
    /// credits go back upstream one link latency later.
    fn pop_head(&mut self, b: usize) -> u32 {
        let p = self.fifo[b].pop_front().expect("a head to take");
        let cost = credit_bytes(self.pkts[p as usize].wire);
        self.occ[b] -= cost;
        self.push(self.now + self.lat_ps[b / self.nv], CREDIT, b as u32, cost);
        p
    }

    /// Flow `f` was stopped: its packets waiting in input buffers behind the head are
    /// thrown away now (their space and credits go back); a head packet already
    /// asking for its output goes on, and packets on a link are thrown away as they
    /// reach the head of the next buffer ([`Self::request_front`]).
    fn purge(&mut self, f: usize) {
        let ver = self.flows[f].ver;
        for b in 0..self.fifo.len() {
            if self.fifo[b].len() < 2 {
                continue;
            }
            let mut freed = 0u32;
            let mut i = 1;
            while i < self.fifo[b].len() {
                let p = self.fifo[b][i];
                let pk = self.pkts[p as usize];
                if pk.flow as usize == f && pk.ver == ver {
                    self.fifo[b].remove(i);
                    freed += credit_bytes(pk.wire);
                    self.flows[f].in_flight -= 1;
                    self.stopped_discards += 1;
                    self.free_pkts.push(p);
                } else {
                    i += 1;
                }
            }
            if freed > 0 {
                self.occ[b] -= freed;
                self.push(self.now + self.lat_ps[b / self.nv], CREDIT, b as u32, freed);
            }
        }
    }

    /// The head packet of input buffer `b` has been read out: it leaves the buffer,
    /// and the next head asks for its output.
    fn read_out(&mut self, b: usize) {
        self.pop_head(b);
        self.reading[b] = false;
        self.request_front(b);
    }

    fn handle(&mut self, ev: Ev, done: &mut Vec<u32>) {
        match ev.kind {
            TX_DONE => {
                let c = ev.a as usize;
                self.busy[c] = false;
                let b = self.tx_from[c];
                if b != NONE {
                    self.read_out(b as usize);
                }
                self.kick(c);
            }
            READ_DONE => self.read_out(ev.a as usize),
            ARRIVE => {
                let p = ev.a;
                let pk = self.pkts[p as usize];
                let c = self.routes[(pk.route + pk.hop as u32 - 1) as usize] as usize;
                let b = c * self.nv + pk.vl as usize;
                self.fifo[b].push_back(p);
                self.occ[b] += credit_bytes(pk.wire);
                self.peak[b] = self.peak[b].max(self.occ[b]);
                self.request_front(b);
            }
            DELIVER => {
                let p = ev.a;
                let pk = self.pkts[p as usize];
                let c = self.routes[(pk.route + pk.hop as u32 - 1) as usize] as usize;
                let b = c * self.nv + pk.vl as usize;
                // the host drains its buffer as the packet comes in
                self.push(
                    self.now + self.lat_ps[c],
                    CREDIT,
                    b as u32,
                    credit_bytes(pk.wire),
                );
                let f = pk.flow as usize;
                let fl = &mut self.flows[f];
                if fl.ver == pk.ver {
                    fl.in_flight -= 1;
                    if fl.active {
                        self.receive(f, pk.psn, pk.payload, done);
                    }
                }
                self.free_pkts.push(p);
            }
            TIMER => self.timeout(ev.a as usize, ev.b),

            NAK => self.nak(ev.a as usize, ev.b),
            _ => {
                let k = ev.a as usize;
                self.credits[k] += ev.b as i64;
                let c = k / self.nv;
                if self.wait_since[k] >= 0 {
                    if let Some(r) = self.next_grant(k) {
                        if self.credits[k] >= credit_bytes(self.next_wire(r)) as i64 {
                            self.xmit_wait[k] += self.now - self.wait_since[k];
                            self.wait_since[k] = -1;
                        }
                    }
                }
                self.kick(c);
            }
        }
    }
}

impl Physics for Packets {
    fn name(&self) -> &'static str {
        "packet"
    }
    fn latency_up_front(&self) -> bool {
        false
    }
    fn start(&mut self, net: &Net, f: usize, now: Ns) {
        if self.cap.is_empty() {
            self.sync_net(net);
        }
        self.now = self.now.max(now * 1000);
        if self.flows.len() <= f {
            self.flows.resize(f + 1, PFlow::default());
        }
        let old = self.flows[f];
        if old.rec {
            self.rec.remove(&(f as u32));
        }
        let bytes = net.flows[f].bytes.ceil().min(u64::MAX as f64 / 2.0) as u64;
        let sl = net.flows[f].sl as usize & 15;
        self.flows[f] = PFlow {
            route: old.route,
            room: if old.in_flight == 0 { old.room } else { 0 },
            ver: old.ver.wrapping_add(1),
            vl: self.cfg.sl2vl[sl],
            active: true,
            hdr: bytes == 0,
            left: bytes,
            bytes,
            start_ps: self.now,
            progress_ps: self.now,
            done_ps: -1,
            ..PFlow::default()
        };
        let path = net.path(f);
        self.copy_route(f, path);
        self.flows[f].ideal_ps = self.ideal(path, bytes);
        self.enqueue_host(f);
        self.flush();
        self.flush();
    }
    fn leave(&mut self, _net: &Net, f: usize, now: Ns) {
        if f < self.flows.len() {
            self.dequeue_host(f);
            self.flows[f].active = false;
            self.flows[f].stopped = !all_taken(&self.flows[f]);
            if self.flows[f].stopped && self.flows[f].in_flight > 0 {
                // at the instant's settle, not at once: a flow that leaves only to
                // be re-routed rejoins before then
                self.now = self.now.max(now * 1000);
                self.to_purge.push((f as u32, self.flows[f].ver));
            }
        }
    }
    fn rejoin(&mut self, net: &Net, f: usize, now: Ns) {
        if self.cap.is_empty() {
            self.sync_net(net);
        }
        self.now = self.now.max(now * 1000);
        self.flows[f].active = true;
        self.flows[f].stopped = false; // it left only to be re-routed
        let path = net.path(f);
        self.copy_route(f, path);
        if self.flows[f].ideal_ps < 0 {
            // it started on a path to nowhere: its time alone is the new path's
            self.flows[f].ideal_ps = self.ideal(path, self.flows[f].bytes);
        }
        self.enqueue_host(f);
        self.flush();
    }
    fn sl_changed(&mut self, net: &Net, f: usize, now: Ns) {
        if f < self.flows.len() && self.flows[f].active {
            self.now = self.now.max(now * 1000);
            self.dequeue_host(f);
            self.flows[f].vl = self.cfg.sl2vl[net.flows[f].sl as usize & 15];
            self.enqueue_host(f);
            self.flush();
        }
    }
    fn channels_changed(&mut self, net: &Net, channels: &[u32], now: Ns) {
        let was_down: Vec<bool> = channels
            .iter()
            .map(|&c| !self.cap.is_empty() && self.is_down(c as usize))
            .collect();
        self.sync_net(net);
        self.now = self.now.max(now * 1000);
        let mut went_down = vec![];
        let mut went_up = false;
        for (&c, &was) in channels.iter().zip(&was_down) {
            let down = self.is_down(c as usize);
            if down && !was {
                went_down.push(c as usize);
            }
            went_up |= was && !down;
        }
        if !went_down.is_empty() {
            // a flow whose path crosses a link that is down sends nothing more
            for f in 0..self.flows.len() {
                if self.flows[f].queued && !self.path_up(f) {
                    self.dequeue_host(f);
                }
            }
            // the heads waiting for a dead output are dropped, and so is each packet
            // behind them that wants it, as it comes to the head
            for &c in &went_down {
                for v in 0..self.nv {
                    let k = c * self.nv + v;
                    if self.wait_since[k] >= 0 {
                        self.xmit_wait[k] += self.now - self.wait_since[k];
                        self.wait_since[k] = -1;
                    }
                    for r in std::mem::take(&mut self.req[k]) {
                        debug_assert!(r & HOST == 0, "its flow was held above");
                        if r & HOST == 0 {
                            self.requested[r as usize] = false;
                            self.request_front(r as usize);
                        }
                    }
                }
            }
        }
        if went_up {
            // flows that waited for their path go on
            for f in 0..self.flows.len() {
                if self.flows[f].active {
                    self.enqueue_host(f);
                }
            }
        }
        for &c in channels {
            self.kick(c as usize);
        }
        self.flush();
    }
    fn next_time(&self) -> Option<Ns> {
        // ceil to whole ns: the engine's clock reaches it no earlier than it is due
        self.heap.peek().map(|e| (e.0 .0 + 999).div_euclid(1000))
    }
    fn advance(&mut self, net: &Net, now: Ns, done: &mut Vec<u32>) -> u64 {
        if self.cap.is_empty() {
            self.sync_net(net);
        }
        let until = now * 1000;
        let mut n = 0;
        while let Some(&std::cmp::Reverse(key)) = self.heap.peek() {
            let ev = Ev::unpack(key);
            if ev.t > until {
                break;
            }
            self.heap.pop();
            self.now = ev.t;
            self.handle(ev, done);
            n += 1;
            if self.heap.peek().is_none_or(|e| e.0 .0 != ev.t) {
                self.flush();
            }
        }
        n
    }
    fn run_ahead(
        &mut self,
        net: &Net,
        now: Ns,
        horizon: Ns,
        budget: u64,
        done: &mut Vec<u32>,
    ) -> (u64, Ns) {
        if self.cap.is_empty() {
            self.sync_net(net);
        }
        let until = horizon.max(now).saturating_mul(1000);
        let mut n = 0u64;
        let mut reached = now;
        while let Some(&std::cmp::Reverse(key)) = self.heap.peek() {
            let ev = Ev::unpack(key);
            let at = (ev.t + 999).div_euclid(1000);
            // an instant is handled whole; stop before the next one when a flow
            // finished (the engine must see it now) or the budget is spent
            if ev.t > until || (at > reached && (!done.is_empty() || n >= budget)) {
                break;
            }
            self.heap.pop();
            self.now = ev.t;
            reached = at;
            self.handle(ev, done);
            n += 1;
            if self.heap.peek().is_none_or(|e| e.0 .0 != ev.t) {
                self.flush();
            }
        }
        (n, reached)
    }
    fn settle(&mut self, _net: &Net, _now: Ns) {
        for (f, ver) in std::mem::take(&mut self.to_purge) {
            let fl = &self.flows[f as usize];
            if fl.stopped && fl.ver == ver && fl.in_flight > 0 {
                self.purge(f as usize);
            }
        }
    }
    fn truncate_after(&mut self, now: Ns) {
        let until = now * 1000;
        if self.heap.iter().any(|e| e.0 .0 > until) {
            let keep: Vec<_> = self.heap.drain().filter(|e| e.0 .0 <= until).collect();
            self.heap.extend(keep);
        }
    }
    fn sent(&self, f: usize, _now: Ns) -> f64 {
        self.flows.get(f).map_or(0.0, |p| p.delivered as f64)
    }
    fn rate(&self, _f: usize) -> f64 {
        0.0
    }
    /// Wire bytes each channel has carried by `now`: a packet's bytes count as they
    /// are serialised, evenly from its start to its end, so no interval shows a
    /// link above its rate (a packet counted whole when it starts would).
    fn channel_bytes_into(&self, now: Ns, out: &mut Vec<f64>) {
        let t = now.saturating_mul(1000);
        let at = out.len();
        out.extend_from_slice(&self.chan_bytes);
        for (c, &(start, end, wire)) in self.tx_span.iter().enumerate() {
            if end > t && wire > 0 {
                // still being sent at `now`: the part not yet on the wire
                let left = if start >= t {
                    1.0
                } else {
                    (end - t) as f64 / (end - start) as f64
                };
                out[at + c] -= wire as f64 * left;
            }
        }
    }
    fn flows_on(&self, channels: &[u32]) -> Vec<u32> {
        let want: std::collections::HashSet<u32> = channels.iter().copied().collect();
        (0..self.flows.len() as u32)
            .filter(|&f| {
                let p = &self.flows[f as usize];
                p.active
                    && self.routes[p.route as usize..p.route as usize + p.route_len as usize]
                        .iter()
                        .any(|c| want.contains(c))
            })
            .collect()
    }
    fn add_stats(&self, s: &mut Stats) {
        s.packet_hops += self.packet_hops;
    }
    fn sample(&mut self, _now: Ns, limit: usize) -> bool {
        if self.occ_samples.len().saturating_add(self.occ.len()) > limit
            || self.occ_samples.try_reserve(self.occ.len()).is_err()
        {
            return false;
        }
        self.occ_samples.extend_from_slice(&self.occ);
        true
    }
    fn thin_samples(&mut self, keep: &[usize]) {
        let n = self.occ.len();
        for (i, &j) in keep.iter().enumerate() {
            if n > 0 {
                self.occ_samples.copy_within(j * n..(j + 1) * n, i * n);
            }
        }
        self.occ_samples.truncate(keep.len() * n);
    }
    fn message_times(&self, f: usize) -> Option<(i64, i64)> {
        Some(
            self.flows
                .get(f)
                .map_or((-1, -1), |p| (p.start_ps, p.ideal_ps)),
        )
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
