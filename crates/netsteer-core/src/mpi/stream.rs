//! MPI jobs streamed through the engine, rank by rank.
//!
//! Each rank walks its program one blocking operation at a time. An operation is
//! *posted* when the rank's previous one is over (every message of it finished);
//! a message becomes an engine flow when its send and its receive are both posted
//! (rendezvous, as SMPI runs every message under netsteer's settings). This is the
//! flow DAG of `netsteer.traffic.mpi` -- a message depends on the frontiers of both
//! ends -- run instead of built: only the messages in flight exist.
//!
//! A rank blocks on one operation at a time, and an operation has at most one send
//! and one receive, so a pair of ranks never has more than one unmatched message:
//! matching is a look at the peer's posted operation, and the memory is O(ranks +
//! messages in flight). The one exception is a receive from every other rank at
//! once (a non-blocking linear reduce's root): it keeps who has sent until all have.

use std::collections::HashMap;

use super::algo::{Collective, Cursor, Op, FROM_ALL};
use crate::engine::Engine;
use crate::route::Router;
use crate::Ns;

/// One step of a program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    Collective(Collective),
    /// Every rank computes (a pure delay) for this long.
    Compute(Ns),
    /// `MPI_Send` from rank `src` matched by `MPI_Recv` at rank `dst`.
    Send {
        src: usize,
        dst: usize,
        bytes: u64,
    },
}

/// An MPI job as the engine runs it.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Host index of each rank.
    pub hosts: Vec<u32>,
    pub steps: Vec<Step>,
    pub repeat: u32,
    /// Every rank waits this long (from when the job is added) before its program.
    pub start_ns: Ns,
    pub priority: u8,
    pub weight: f64,
    /// The InfiniBand service level of its messages (the packet fidelity's VL
    /// follows from it; the fluid physics does not read it).
    pub sl: u8,
    /// Added to every message (SMPI's MPI envelope).
    pub envelope: u64,
}

/// One executed step of one job: when its first message was released, when its
/// last one finished, and how many flows it made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub job: u32,
    pub iteration: u32,
    pub step: u32,
    /// `Ns::MAX` / -1 while nothing of it has been released / finished.
    pub first_release: Ns,
    pub last_done: Ns,
    pub flows: u64,
    /// Bytes of the messages released, envelopes included: exact (an integer, also
    /// past 2^53 and past u64 for a step of many 1 EiB messages).
    pub bytes: u128,
}

#[derive(Debug, Clone)]
pub struct Job {
    pub spec: JobSpec,
    pub first_rank: usize,
    pub first_span: usize,
    pub ranks_left: usize,
    /// Last finish of any of its flows, or when its last rank finished if later (a
    /// job that exchanges nothing); -1 before either.
    pub completion: Ns,
    /// Its messages' latency and queueing, when the physics has packets.
    pub times: MessageTimes,
}

/// Per job: the messages' latency (release to last byte) and the part of it spent
/// queueing (beyond their time alone on an idle fabric), summed as they finish, as
/// the DAG's per-flow figures would be; a streamed flow's slot is reused.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MessageTimes {
    pub messages: u64,
    pub latency_sum: f64,
    pub latency_max: Ns,
    /// messages with a time alone (all but the empty ones)
    pub queued: u64,
    pub queueing_sum: f64,
    pub queueing_max: Ns,
}

impl MessageTimes {
    /// A message released at `released`, done at `done` (engine time, ns), whose
    /// first packet could leave at `start_ps` and which takes `ideal_ps` alone.
    fn add(&mut self, released: Ns, done: Ns, start_ps: i64, ideal_ps: i64) {
        if released < 0 || done < 0 || start_ps < 0 {
            return;
        }
        let lat = done - released;
        self.messages += 1;
        self.latency_sum += lat as f64;
        self.latency_max = self.latency_max.max(lat);
        if ideal_ps >= 0 {
            // ps to whole ns up, as the DAG's report rounds them
            let q = (done - (start_ps + 999) / 1000 - (ideal_ps + 999) / 1000).max(0);
            self.queued += 1;
            self.queueing_sum += q as f64;
            self.queueing_max = self.queueing_max.max(q);
        }
    }
}

const NO_SPAN: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Message { src: u32, dst: u32 },
    Compute { rank: u32 },
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    kind: Kind,
    span: u32,
}

#[derive(Debug, Clone, Default)]
struct Rank {
    job: u32,
    /// step index in the program, and the iteration
    step: u32,
    iteration: u32,
    /// messages (or the compute) of the posted operation not finished yet
    pending: u32,
    /// the posted operation's send not matched yet: (peer, bytes)
    send_wait: Option<(u32, u64)>,
    /// the posted operation's receive not matched yet: the peer
    recv_wait: Option<u32>,
    cursor: Cursor,
    started: bool,
    done: bool,
}

/// A rank's receive from every other rank: who has been matched so far.
#[derive(Debug, Clone)]
struct FromAll {
    got: Vec<bool>,
    left: usize,
}

/// Hops a rank's last route keeps (a 6-level fat-tree's longest path); longer
/// routes are not kept.
const KEPT_HOPS: usize = 12;

/// A rank's last route: ring and pipelined algorithms send to the same peer step
/// after step, and D-mod-K's label arithmetic (some twenty integer divisions) costs
/// more than the rest of a message's handling.
#[derive(Clone, Copy)]
struct LastRoute {
    /// destination host, `u32::MAX` for none
    dst: u32,
    len: u8,
    hops: [u32; KEPT_HOPS],
}

impl Default for LastRoute {
    fn default() -> Self {
        LastRoute {
            dst: u32::MAX,
            len: 0,
            hops: [0; KEPT_HOPS],
        }
    }
}

/// Progress counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub messages_done: u64,
    pub computes_done: u64,
    pub in_flight: u64,
    pub peak_in_flight: u64,
    pub ranks: u64,
    pub ranks_done: u64,
}

/// The source of streamed MPI flows (see the module notes).
pub struct Stream {
    router: Box<dyn Router>,
    jobs: Vec<Job>,
    ranks: Vec<Rank>,
    spans: Vec<Span>,
    /// per engine slot: what the flow in it is
    slots: Vec<Option<InFlight>>,
    progress: Progress,
    path: Vec<u32>,
    /// per rank (as `ranks`): the route of its last message
    last_route: Vec<LastRoute>,
    /// ranks receiving from every other rank (a `FROM_ALL` receive), by rank
    from_all: HashMap<usize, FromAll>,
    error: Option<String>,
}

/// Refuse a program a `p`-rank job cannot run, naming the step (`program step i:
/// reason`): what [`Stream::add_job`] checks of the steps, callable before a run.
pub fn check_steps(p: usize, steps: &[Step]) -> Result<(), String> {
    for (i, st) in steps.iter().enumerate() {
        let bad = match *st {
            Step::Collective(c) => c.check(p).err(),
            Step::Compute(ns) if ns < 0 => Some("negative duration".into()),
            Step::Send { src, dst, .. } if src >= p || dst >= p || src == dst => Some(format!(
                "send from rank {src} to rank {dst}: not two distinct ranks of this {p}-rank job"
            )),
            _ => None,
        };
        if let Some(reason) = bad {
            return Err(format!("program step {i}: {reason}"));
        }
    }
    Ok(())
}

/// Messages (flows: a compute step is one delay flow per rank) and bytes (envelopes
/// included) one execution of `step` makes on `p` ranks: what the flow DAG holds of
/// it and what a finished stream counts in its span. Walks every rank's operations:
/// time grows with the messages, memory does not. For the steps a stalled job never
/// ran, counted as the DAG would hold them.
pub fn step_totals(p: usize, step: &Step, envelope: u64) -> (u64, u128) {
    match *step {
        Step::Compute(_) => (p as u64, 0),
        Step::Send { bytes, .. } => (1, u128::from(bytes + envelope)),
        Step::Collective(c) => {
            let (mut n, mut total) = (0u64, 0u128);
            for r in 0..p {
                let mut ops = c.cursor(p, r);
                while let Some(op) = ops.next(p, r) {
                    if let Some((_, bytes)) = op.send {
                        n += 1;
                        total += u128::from(bytes + envelope);
                    }
                }
            }
            (n, total)
        }
    }
}

impl Stream {
    pub fn new(router: Box<dyn Router>) -> Self {
        Stream {
            router,
            jobs: vec![],
            ranks: vec![],
            spans: vec![],
            slots: vec![],
            progress: Progress::default(),
            path: vec![],
            last_route: vec![],
            from_all: HashMap::new(),
            error: None,
        }
    }

    pub fn set_router(&mut self, router: Box<dyn Router>) {
        self.router = router;
        self.last_route.fill(LastRoute::default()); // routes of the old router
    }
    pub fn router(&self) -> &dyn Router {
        self.router.as_ref()
    }
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }
    pub fn progress(&self) -> Progress {
        self.progress
    }
    /// What stopped the stream (a message with no route), if anything did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
    /// Every rank of every job is through its program.
    pub fn finished(&self) -> bool {
        self.progress.ranks_done == self.progress.ranks || self.error.is_some()
    }
    /// Ranks that have not finished, by job index (a deadlock leaves some).
    pub fn ranks_left(&self) -> Vec<(usize, usize)> {
        self.jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.ranks_left > 0)
            .map(|(i, j)| (i, j.ranks_left))
            .collect()
    }
    /// Bytes held per rank (its state and a cursor list of a few operations), for
    /// memory estimates.
    pub fn bytes_per_rank() -> usize {
        std::mem::size_of::<Rank>()
            + 8 * std::mem::size_of::<Op>()
            + std::mem::size_of::<LastRoute>()
    }

    /// Bytes the stream holds per message in flight (the engine's flow slot apart).
    pub fn bytes_per_message() -> usize {
        std::mem::size_of::<Option<InFlight>>()
    }

    /// Check `spec` and post every rank's first operation.
    pub fn add_job(&mut self, eng: &mut Engine, spec: JobSpec) -> Result<usize, String> {
        let p = spec.hosts.len();
        if p == 0 {
            return Err("a job needs at least one rank".into());
        }
        if spec.repeat == 0 {
            return Err("repeat must be at least 1".into());
        }
        if !(spec.weight > 0.0 && spec.weight.is_finite()) {
            return Err(format!("weight {} is not positive", spec.weight));
        }
        if spec.start_ns < 0 {
            return Err("start must not be negative".into());
        }
        let n_hosts = self.router.n_hosts();
        if let Some(h) = spec.hosts.iter().find(|&&h| h as usize >= n_hosts) {
            return Err(format!(
                "host {h} does not exist: the router knows {n_hosts} hosts"
            ));
        }
        check_steps(p, &spec.steps)?;
        let job = self.jobs.len() as u32;
        let first_rank = self.ranks.len();
        let first_span = self.spans.len();
        for it in 0..spec.repeat {
            for s in 0..spec.steps.len() {
                self.spans.push(Span {
                    job,
                    iteration: it,
                    step: s as u32,
                    first_release: Ns::MAX,
                    last_done: -1,
                    flows: 0,
                    bytes: 0,
                });
            }
        }
        let start = spec.start_ns;
        self.ranks.extend((0..p).map(|_| Rank {
            job,
            ..Rank::default()
        }));
        self.last_route
            .resize(self.ranks.len(), LastRoute::default());
        self.progress.ranks += p as u64;
        self.jobs.push(Job {
            spec,
            first_rank,
            first_span,
            ranks_left: p,
            completion: -1,
            times: MessageTimes::default(),
        });
        for r in first_rank..first_rank + p {
            if start > 0 {
                // the job's start: a delay on every rank, part of no step
                self.ranks[r].pending = 1;
                self.compute(eng, r, start, NO_SPAN);
            } else {
                self.advance(eng, r);
            }
        }
        Ok(job as usize)
    }

    /// The engine says flow `f` (one of ours) finished now.
    pub fn flow_done(&mut self, eng: &mut Engine, f: u32) {
        let Some(info) = self.slots.get_mut(f as usize).and_then(|s| s.take()) else {
            return;
        };
        let now = eng.now();
        self.progress.in_flight -= 1;
        if info.span != NO_SPAN {
            let sp = &mut self.spans[info.span as usize];
            sp.last_done = sp.last_done.max(now);
            let job = &mut self.jobs[sp.job as usize];
            job.completion = job.completion.max(now);
        }
        match info.kind {
            Kind::Message { src, dst } => {
                self.progress.messages_done += 1;
                // a message the physics never saw has no packets (its slot may hold a
                // former flow's times)
                let fu = f as usize;
                let seen = eng.crosses_physics(fu);
                if let Some((start_ps, ideal_ps)) = eng.physics().message_times(fu).filter(|_| seen)
                {
                    let job = self.ranks[src as usize].job as usize;
                    let (rel, done) = (eng.release_time(fu), eng.completion(fu));
                    self.jobs[job].times.add(rel, done, start_ps, ideal_ps);
                }
                for r in [src as usize, dst as usize] {
                    self.ranks[r].pending -= 1;
                    if self.ranks[r].pending == 0 {
                        self.advance(eng, r);
                    }
                }
            }
            Kind::Compute { rank } => {
                self.progress.computes_done += 1;
                let r = rank as usize;
                self.ranks[r].pending -= 1;
                if self.ranks[r].pending == 0 {
                    self.advance(eng, r);
                }
            }
        }
    }

    fn span_of(&self, r: usize) -> u32 {
        let rk = &self.ranks[r];
        let job = &self.jobs[rk.job as usize];
        (job.first_span + rk.iteration as usize * job.spec.steps.len() + rk.step as usize) as u32
    }

    /// Rank `r`'s posted operation is over: post its next one (entering the next
    /// steps as needed), or mark it done.
    fn advance(&mut self, eng: &mut Engine, r: usize) {
        if self.error.is_some() {
            return;
        }
        loop {
            let rk = &self.ranks[r];
            let job = &self.jobs[rk.job as usize];
            let p = job.spec.hosts.len();
            let local = r - job.first_rank;
            let n_steps = job.spec.steps.len();
            if !rk.started {
                // enter the current step
                if rk.iteration as usize >= job.spec.repeat as usize || n_steps == 0 {
                    self.rank_done(r, eng.now());
                    return;
                }
                let step = job.spec.steps[rk.step as usize];
                let span = self.span_of(r);
                self.ranks[r].started = true;
                match step {
                    Step::Collective(c) => self.ranks[r].cursor = c.cursor(p, local),
                    Step::Compute(ns) => {
                        self.ranks[r].pending = 1;
                        self.compute(eng, r, ns, span);
                        return;
                    }
                    Step::Send { src, dst, bytes } => {
                        let mut ops = Cursor::default();
                        if local == src {
                            ops = Cursor::from_ops(vec![super::algo::send(dst, bytes)]);
                        } else if local == dst {
                            ops = Cursor::from_ops(vec![super::algo::recv(src)]);
                        }
                        self.ranks[r].cursor = ops;
                    }
                }
            }
            let next = self.ranks[r].cursor.next(p, local);
            match next {
                Some(op) => {
                    self.post(eng, r, op);
                    if self.ranks[r].pending > 0 || self.error.is_some() {
                        return;
                    }
                }
                None => {
                    // the step is over for this rank: on to the next one
                    let rk = &mut self.ranks[r];
                    rk.started = false;
                    rk.cursor = Cursor::default();
                    rk.step += 1;
                    if rk.step as usize == n_steps {
                        rk.step = 0;
                        rk.iteration += 1;
                    }
                }
            }
        }
    }

    /// Rank `r` has run its whole program, at `now`. A job is complete when its last
    /// rank is, even one whose ranks exchanged nothing (one rank, empty reduces): at its
    /// start, or after its computes (its flows' ends count already).
    fn rank_done(&mut self, r: usize, now: Ns) {
        let rk = &mut self.ranks[r];
        if !rk.done {
            rk.done = true;
            self.progress.ranks_done += 1;
            let job = &mut self.jobs[rk.job as usize];
            job.ranks_left -= 1;
            if job.ranks_left == 0 {
                job.completion = job.completion.max(now);
            }
        }
    }

    /// Post `op` for rank `r`: match what the peers have posted, queue the rest.
    fn post(&mut self, eng: &mut Engine, r: usize, op: Op) {
        let base = self.jobs[self.ranks[r].job as usize].first_rank;
        let span = self.span_of(r);
        let me = (r - base) as u32; // r's rank in its job
        let mut pending = 0;
        if let Some((peer, bytes)) = op.send {
            pending += 1;
            let d = base + peer as usize;
            if self.ranks[d].recv_wait == Some(me) {
                self.ranks[d].recv_wait = None;
                self.message(eng, r, d, bytes, span);
            } else if self.ranks[d].recv_wait == Some(FROM_ALL) && self.take_from_all(d, me) {
                self.message(eng, r, d, bytes, span);
            } else {
                self.ranks[r].send_wait = Some((peer, bytes));
            }
        }
        if op.recv == Some(FROM_ALL) {
            let p = self.jobs[self.ranks[r].job as usize].spec.hosts.len();
            pending += p as u32 - 1;
            self.ranks[r].recv_wait = Some(FROM_ALL);
            self.from_all.insert(
                r,
                FromAll {
                    got: vec![false; p],
                    left: p - 1,
                },
            );
            // senders already waiting, in rank order
            for s in base..base + p {
                match self.ranks[s].send_wait {
                    Some((to, bytes)) if to == me && s != r => {
                        self.ranks[s].send_wait = None;
                        self.take_from_all(r, (s - base) as u32);
                        self.message(eng, s, r, bytes, span);
                    }
                    _ => {}
                }
            }
        } else if let Some(peer) = op.recv {
            pending += 1;
            let s = base + peer as usize;
            match self.ranks[s].send_wait {
                Some((to, bytes)) if to as usize == r - base => {
                    self.ranks[s].send_wait = None;
                    self.message(eng, s, r, bytes, span);
                }
                _ => self.ranks[r].recv_wait = Some(peer),
            }
        }
        self.ranks[r].pending = pending;
    }

    /// Match rank `d`'s receive from every rank with a message from local rank
    /// `src`, unless `src` has already sent it one.
    fn take_from_all(&mut self, d: usize, src: u32) -> bool {
        let Some(fa) = self.from_all.get_mut(&d) else {
            return false;
        };
        if std::mem::replace(&mut fa.got[src as usize], true) {
            return false;
        }
        fa.left -= 1;
        if fa.left == 0 {
            self.from_all.remove(&d);
            self.ranks[d].recv_wait = None;
        }
        true
    }

    fn message(&mut self, eng: &mut Engine, s: usize, d: usize, bytes: u64, span: u32) {
        let job = &self.jobs[self.ranks[s].job as usize];
        let local = |x: usize| x - job.first_rank;
        let (hs, hd) = (job.spec.hosts[local(s)], job.spec.hosts[local(d)]);
        let whole = bytes + job.spec.envelope;
        let size = whole as f64;
        let (w, prio, sl) = (job.spec.weight, job.spec.priority, job.spec.sl);
        let last = &mut self.last_route[s];
        let f = if last.dst == hd {
            eng.add_streamed(size, &last.hops[..last.len as usize], 0, w, prio, sl)
        } else {
            self.path.clear();
            if let Err(e) = self.router.path(hs as usize, hd as usize, &mut self.path) {
                self.error = Some(e);
                return;
            }
            if self.path.len() <= KEPT_HOPS {
                last.dst = hd;
                last.len = self.path.len() as u8;
                last.hops[..self.path.len()].copy_from_slice(&self.path);
            }
            eng.add_streamed(size, &self.path, 0, w, prio, sl)
        };
        self.track(
            f,
            InFlight {
                kind: Kind::Message {
                    src: s as u32,
                    dst: d as u32,
                },
                span,
            },
            eng.now(),
            whole,
        );
    }

    fn compute(&mut self, eng: &mut Engine, r: usize, ns: Ns, span: u32) {
        let prio = self.jobs[self.ranks[r].job as usize].spec.priority;
        let f = eng.add_streamed(0.0, &[], ns, 1.0, prio, 0);
        let kind = Kind::Compute { rank: r as u32 };
        self.track(f, InFlight { kind, span }, eng.now(), 0);
    }

    fn track(&mut self, f: u32, info: InFlight, now: Ns, bytes: u64) {
        let f = f as usize;
        if self.slots.len() <= f {
            self.slots.resize(f + 1, None);
        }
        self.slots[f] = Some(info);
        self.progress.in_flight += 1;
        self.progress.peak_in_flight = self.progress.peak_in_flight.max(self.progress.in_flight);
        if info.span != NO_SPAN {
            let sp = &mut self.spans[info.span as usize];
            sp.first_release = sp.first_release.min(now);
            sp.flows += 1;
            sp.bytes += u128::from(bytes);
        }
    }
}
