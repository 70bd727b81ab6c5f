//! Collective algorithms as per-rank generators of blocking operations.
//!
//! Each algorithm gives, for one rank, the operations it runs in order -- the same
//! partners, sizes and order as `python/netsteer/traffic/collectives` (which follow
//! SMPI's `src/smpi/colls`). Nothing is built for the whole job: a rank's operations
//! are produced when it enters the collective, as a short list (trees, O(log p)) and
//! an arithmetic tail for the long lock-step runs (rings, pairwise, linear roots), so
//! a rank costs O(log p) memory whatever the collective.

/// One blocking operation: at most one send `(peer, bytes)` and one receive `peer`.
/// A `sendrecv` has both. A receive from [`FROM_ALL`] takes one message from every
/// other rank, all posted at once (`MPI_Irecv` each, then `MPI_Waitall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub send: Option<(u32, u64)>,
    pub recv: Option<u32>,
}

pub fn send(peer: usize, bytes: u64) -> Op {
    Op {
        send: Some((peer as u32, bytes)),
        recv: None,
    }
}
pub fn recv(peer: usize) -> Op {
    Op {
        send: None,
        recv: Some(peer as u32),
    }
}
/// The receive peer that stands for every other rank of the job.
pub const FROM_ALL: u32 = u32::MAX;

pub fn recv_all() -> Op {
    Op {
        send: None,
        recv: Some(FROM_ALL),
    }
}
pub fn sendrecv(dst: usize, bytes: u64, src: usize) -> Op {
    Op {
        send: Some((dst as u32, bytes)),
        recv: Some(src as u32),
    }
}

/// The collectives, by operation and algorithm (netsteer's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    BcastBinomial,
    BcastScatterAllgather,
    ReduceBinomial,
    ReduceRabenseifner,
    ReduceNonblockingLinear,
    AllreduceRing,
    AllreduceRecursiveDoubling,
    AllreduceRabenseifner,
    AlltoallPairwise,
    AlltoallBruck,
    AlltoallRing,
    AllgatherRing,
    AllgatherRecursiveDoubling,
    AllgatherBruck,
    GatherBinomial,
    GatherLinear,
    ScatterBinomial,
    ScatterLinear,
    BarrierDissemination,
    BarrierRecursiveDoubling,
}

/// `(op, algorithm, Algo)`: the Python registry's names.
const NAMES: &[(&str, &str, Algo)] = &[
    ("bcast", "binomial", Algo::BcastBinomial),
    ("bcast", "scatter_allgather", Algo::BcastScatterAllgather),
    ("reduce", "binomial", Algo::ReduceBinomial),
    ("reduce", "rabenseifner", Algo::ReduceRabenseifner),
    (
        "reduce",
        "nonblocking_linear",
        Algo::ReduceNonblockingLinear,
    ),
    ("allreduce", "ring", Algo::AllreduceRing),
    (
        "allreduce",
        "recursive_doubling",
        Algo::AllreduceRecursiveDoubling,
    ),
    ("allreduce", "rabenseifner", Algo::AllreduceRabenseifner),
    ("alltoall", "pairwise", Algo::AlltoallPairwise),
    ("alltoall", "bruck", Algo::AlltoallBruck),
    ("alltoall", "ring", Algo::AlltoallRing),
    ("allgather", "ring", Algo::AllgatherRing),
    (
        "allgather",
        "recursive_doubling",
        Algo::AllgatherRecursiveDoubling,
    ),
    ("allgather", "bruck", Algo::AllgatherBruck),
    ("gather", "binomial", Algo::GatherBinomial),
    ("gather", "linear", Algo::GatherLinear),
    ("scatter", "binomial", Algo::ScatterBinomial),
    ("scatter", "linear", Algo::ScatterLinear),
    ("barrier", "dissemination", Algo::BarrierDissemination),
    (
        "barrier",
        "recursive_doubling",
        Algo::BarrierRecursiveDoubling,
    ),
];

impl Algo {
    /// `(op, algorithm)` as the Python registry names them.
    pub fn by_name(op: &str, algorithm: &str) -> Option<Algo> {
        NAMES
            .iter()
            .find(|t| t.0 == op && t.1 == algorithm)
            .map(|t| t.2)
    }

    /// The algorithm's name (the Python registry's).
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|t| t.2 == self).map_or("?", |t| t.1)
    }
}

/// One collective of a program, as the job runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collective {
    pub algo: Algo,
    /// MPI count semantics, as in the Python registry.
    pub bytes: u64,
    pub root: usize,
    pub elem_bytes: u64,
    /// The job's reduce and bcast, which a ring allreduce runs its leftover with.
    pub job: JobChoices,
}

/// The reduce and bcast algorithms a job runs, as SMPI selects them: once per job.
/// SMPI's ring allreduce (`lr`) passes the `count % p` elements it leaves over (the
/// whole buffer when `count < p`) to them: a reduce to rank 0, then a bcast from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobChoices {
    pub reduce: Algo,
    pub bcast: Algo,
}

impl Default for JobChoices {
    /// What SMPI runs when the job selects none.
    fn default() -> Self {
        JobChoices {
            reduce: Algo::ReduceNonblockingLinear,
            bcast: Algo::BcastBinomial,
        }
    }
}

fn pof2_floor(p: usize) -> usize {
    1 << (usize::BITS - 1 - p.leading_zeros())
}

fn elements(nbytes: u64, elem: u64) -> Result<u64, String> {
    if elem < 1 {
        return Err(format!("element size must be at least 1 byte, got {elem}"));
    }
    if nbytes % elem != 0 {
        return Err(format!(
            "buffer of {nbytes} bytes is not a whole number of {elem}-byte elements"
        ));
    }
    Ok(nbytes / elem)
}

impl Collective {
    /// Refuse what the Python expansion refuses, with the same words.
    pub fn check(&self, p: usize) -> Result<(), String> {
        use Algo::*;
        let rooted = matches!(
            self.algo,
            BcastBinomial
                | BcastScatterAllgather
                | ReduceBinomial
                | ReduceRabenseifner
                | ReduceNonblockingLinear
                | GatherBinomial
                | GatherLinear
                | ScatterBinomial
                | ScatterLinear
        );
        if rooted && self.root >= p {
            return Err(format!(
                "root {} is not a rank of a {p}-rank job (0..{})",
                self.root,
                p - 1
            ));
        }
        if p == 1 {
            return Ok(());
        }
        match self.algo {
            AllreduceRing => {
                let count = elements(self.bytes, self.elem_bytes)?;
                for (op, c) in self.leftover(count, p) {
                    c.check(p).map_err(|e| {
                        format!(
                            "allreduce ring passes its {} leftover elements to the job's {op} \
                             {}, as SMPI's lr does: {e}",
                            c.bytes / c.elem_bytes,
                            c.algo.name()
                        )
                    })?;
                }
            }
            AlltoallPairwise if !p.is_power_of_two() => {
                return Err(format!(
                    "alltoall pairwise pairs ranks by XOR and needs a power-of-two rank count, \
                     got {p}; use algorithm bruck"
                ));
            }
            ReduceRabenseifner => {
                // SMPI 3.32 returns at once on 0 elements and pads fewer than p to p
                // on a power of two; elsewhere its folding step sends p elements to a
                // receive of count and aborts with MPI_ERR_TRUNCATE
                let count = elements(self.bytes, self.elem_bytes)?;
                if count != 0 && count < p as u64 && !p.is_power_of_two() {
                    return Err(format!(
                        "reduce rabenseifner on a non-power-of-two rank count needs at least \
                         one element per rank: {count} elements for {p} ranks (SMPI's \
                         scatter_gather aborts there with MPI_ERR_TRUNCATE); use algorithm \
                         binomial"
                    ));
                }
            }
            AllreduceRabenseifner => {
                elements(self.bytes, self.elem_bytes)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The reduce and the bcast a ring allreduce of `count` elements runs what it
    /// leaves over with (none when the ring takes it all).
    fn leftover(&self, count: u64, p: usize) -> Vec<(&'static str, Collective)> {
        let rest = count % p as u64; // all of it when count < p
        if count >= p as u64 && rest == 0 {
            return vec![];
        }
        let part = |algo| Collective {
            algo,
            bytes: rest * self.elem_bytes,
            root: 0,
            ..*self
        };
        vec![
            ("reduce", part(self.job.reduce)),
            ("bcast", part(self.job.bcast)),
        ]
    }

    /// Rank `rank`'s operations in a `p`-rank job (after [`Collective::check`]).
    pub fn cursor(&self, p: usize, rank: usize) -> Cursor {
        use Algo::*;
        let (n, r, root) = (self.bytes, rank, self.root);
        let mut c = Cursor::default();
        if p == 1 {
            return c;
        }
        let list = &mut c.list;
        match self.algo {
            BcastBinomial => {
                let rel = (r + p - root) % p;
                let mut mask = 1;
                while mask < p {
                    if rel & mask != 0 {
                        list.push(recv((r + p - mask) % p));
                        break;
                    }
                    mask <<= 1;
                }
                mask >>= 1;
                while mask > 0 {
                    if rel + mask < p {
                        list.push(send((r + mask) % p, n));
                    }
                    mask >>= 1;
                }
            }
            BcastScatterAllgather => {
                scatter_for_bcast(p, n, root, r, list);
                let piece = n.div_ceil(p as u64);
                c.tail = Tail::BcastRing {
                    src: r,
                    piece,
                    nbytes: n,
                    root,
                };
                c.left = p as u32 - 1;
            }
            // SMPI's binomial returns at once when count == 0
            ReduceBinomial if n == 0 => {}
            ReduceBinomial => {
                let rel = (r + p - root) % p;
                let mut mask = 1;
                while mask < p {
                    if rel & mask == 0 {
                        let child = rel | mask;
                        if child < p {
                            list.push(recv((child + root) % p));
                        }
                    } else {
                        list.push(send(((rel & !mask) + root) % p, n));
                        break;
                    }
                    mask <<= 1;
                }
            }
            ReduceRabenseifner => reduce_rabenseifner(p, n, root, self.elem_bytes, r, list),
            AllreduceRing => {
                let count = n / self.elem_bytes;
                if count >= p as u64 {
                    c.tail = Tail::Ring {
                        bytes: count / p as u64 * self.elem_bytes,
                    };
                    c.left = 2 * (p as u32 - 1);
                }
                for (_, part) in self.leftover(count, p) {
                    c = c.then(part.cursor(p, r));
                }
                return c;
            }
            ReduceNonblockingLinear => {
                list.push(if r == root { recv_all() } else { send(root, n) });
            }
            AllreduceRecursiveDoubling => {
                let pof2 = pof2_floor(p);
                let rem = p - pof2;
                let newrank = fold_in(list, r, rem, n);
                if let Some(nr) = newrank {
                    let mut mask = 1;
                    while mask < pof2 {
                        let dst = real_rank(nr ^ mask, rem);
                        list.push(sendrecv(dst, n, dst));
                        mask <<= 1;
                    }
                }
                if r < 2 * rem {
                    list.push(if r % 2 == 1 {
                        send(r - 1, n)
                    } else {
                        recv(r + 1)
                    });
                }
            }
            AllreduceRabenseifner => allreduce_rabenseifner(p, n, self.elem_bytes, r, list),
            AlltoallPairwise => {
                c.tail = Tail::Xor { i: 1, bytes: n };
                c.left = p as u32 - 1;
            }
            AlltoallBruck => {
                let mut pof2 = 1;
                while pof2 < p {
                    // blocks whose index (1..p) has this bit set
                    let blocks = count_with_bit(p, pof2) as u64;
                    list.push(sendrecv((r + pof2) % p, blocks * n, (r + p - pof2) % p));
                    pof2 *= 2;
                }
            }
            // SMPI's alltoall ring is the allgather ring's shift exchange, one block
            // per step (its step 0, to the rank itself, is a copy)
            AllgatherRing | AlltoallRing => {
                c.tail = Tail::Shift { i: 1, bytes: n };
                c.left = p as u32 - 1;
            }
            AllgatherRecursiveDoubling => allgather_recursive_doubling(p, n, r, list),
            AllgatherBruck => {
                // send what is gathered (pof2 blocks) to rank - pof2, from rank + pof2
                let mut pof2 = 1;
                while pof2 <= p / 2 {
                    list.push(sendrecv(
                        (r + p - pof2) % p,
                        pof2 as u64 * n,
                        (r + pof2) % p,
                    ));
                    pof2 *= 2;
                }
                if p > pof2 {
                    let rest = (p - pof2) as u64 * n;
                    list.push(sendrecv((r + p - pof2) % p, rest, (r + pof2) % p));
                }
            }
            GatherBinomial => {
                let vrank = (r + p - root) % p;
                let (parent, kids) = in_order_children(vrank, p);
                let mut total = 1u64;
                for vkid in kids {
                    list.push(recv((vkid + root) % p));
                    total += (vkid - vrank).min(p - vkid) as u64;
                }
                if let Some(par) = parent {
                    list.push(send((par + root) % p, total * n));
                }
            }
            ScatterBinomial => {
                let vrank = (r + p - root) % p;
                let (parent, kids) = in_order_children(vrank, p);
                if let Some(par) = parent {
                    list.push(recv((par + root) % p));
                }
                for vkid in kids {
                    list.push(send(
                        (vkid + root) % p,
                        (vkid - vrank).min(p - vkid) as u64 * n,
                    ));
                }
            }
            GatherLinear => {
                if r == root {
                    c.tail = Tail::LinearRecv { next: 0, root };
                    c.left = p as u32 - 1;
                } else {
                    list.push(send(root, n));
                }
            }
            ScatterLinear => {
                if r == root {
                    c.tail = Tail::LinearSend {
                        next: 0,
                        root,
                        bytes: n,
                    };
                    c.left = p as u32 - 1;
                } else {
                    list.push(recv(root));
                }
            }
            BarrierDissemination => {
                let mut d = 1;
                while d < p {
                    list.push(sendrecv((r + d) % p, 0, (r + p - d) % p));
                    d <<= 1;
                }
            }
            BarrierRecursiveDoubling => {
                let adj = pof2_floor(p);
                if adj != p {
                    if r >= adj {
                        list.push(sendrecv(r - adj, 0, r - adj));
                    } else if r < p - adj {
                        list.push(recv(r + adj));
                    }
                }
                if r < adj {
                    let mut mask = 1;
                    while mask < adj {
                        let remote = r ^ mask;
                        mask <<= 1;
                        if remote < adj {
                            list.push(sendrecv(remote, 0, remote));
                        }
                    }
                }
                if adj != p && r < p - adj {
                    list.push(send(r + adj, 0));
                }
            }
        }
        c
    }
}

/// MPICH's recursive doubling allgather (SMPI `rdb`): at the step of `mask`, exchange
/// the blocks of the rank's aligned group of `mask` ranks with `rank ^ mask`. Where
/// the partner's group is cut short by the end of the ranks, the `done` ranks of the
/// group that did exchange pass on the `done` blocks they received, halving the group.
fn allgather_recursive_doubling(p: usize, n: u64, rank: usize, list: &mut Vec<Op>) {
    let mut mask = 1;
    while mask < p {
        let dst = rank ^ mask;
        let group = rank & !(mask - 1);
        let pgroup = dst & !(mask - 1);
        if dst < p {
            list.push(sendrecv(dst, mask.min(p - group) as u64 * n, dst));
        }
        if pgroup + mask > p && group + mask < p {
            let done = p - group - mask; // ranks of the group with the partner's blocks
            let mut half = mask >> 1;
            while half > 0 {
                let peer = rank ^ half;
                let split = (rank & !(2 * half - 1)) + done; // first rank without them
                if peer > rank && rank < split && split <= peer {
                    list.push(send(peer, done as u64 * n));
                } else if peer < rank && peer < split && split <= rank {
                    list.push(recv(peer));
                }
                half >>= 1;
            }
        }
        mask <<= 1;
    }
}

/// How many of `1..p` have bit `bit` set.
fn count_with_bit(p: usize, bit: usize) -> usize {
    // full periods of 2*bit contribute bit each; then the partial period
    let n = p; // numbers 0..p (0 has no bit set)
    let period = 2 * bit;
    (n / period) * bit + (n % period).saturating_sub(bit)
}

/// A rank's remaining operations: a list, then an arithmetic tail of `left` ops,
/// then the cursor chained after it, if any.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    list: Vec<Op>,
    at: usize,
    tail: Tail,
    left: u32,
    then: Option<Box<Cursor>>,
}

#[derive(Debug, Clone, Copy, Default)]
enum Tail {
    #[default]
    None,
    /// sendrecv to `rank + 1`, from `rank - 1` (ring allreduce)
    Ring { bytes: u64 },
    /// sendrecv with `rank ^ i`, `i = 1, 2, ...` (pairwise alltoall)
    Xor { i: usize, bytes: u64 },
    /// sendrecv to `rank + i`, from `rank - i` (ring allgather and alltoall)
    Shift { i: usize, bytes: u64 },
    /// van de Geijn's ring allgather of the bcast pieces
    BcastRing {
        src: usize,
        piece: u64,
        nbytes: u64,
        root: usize,
    },
    /// the root of a linear gather receives from every other rank in order
    LinearRecv { next: usize, root: usize },
    /// the root of a linear scatter sends to every other rank in order
    LinearSend {
        next: usize,
        root: usize,
        bytes: u64,
    },
}

impl Cursor {
    /// A cursor over an explicit list of operations.
    pub fn from_ops(list: Vec<Op>) -> Self {
        Cursor {
            list,
            ..Cursor::default()
        }
    }

    /// This cursor's operations, then `next`'s.
    pub fn then(mut self, next: Cursor) -> Cursor {
        let mut end = &mut self;
        while let Some(ref mut t) = end.then {
            end = t;
        }
        end.then = Some(Box::new(next));
        self
    }

    /// The next operation of rank `rank` in a `p`-rank job, or `None` when done.
    pub fn next(&mut self, p: usize, rank: usize) -> Option<Op> {
        while self.at == self.list.len() && self.left == 0 {
            match self.then.take() {
                Some(t) => *self = *t,
                None => break,
            }
        }
        if self.at < self.list.len() {
            self.at += 1;
            if self.at == self.list.len() && self.left == 0 && self.then.is_none() {
                // done with the list: give its memory back while the rank waits
                let op = self.list[self.at - 1];
                self.list = Vec::new();
                self.at = 0;
                return Some(op);
            }
            return Some(self.list[self.at - 1]);
        }
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = rank;
        Some(match &mut self.tail {
            Tail::None => unreachable!("a tail with operations left"),
            Tail::Ring { bytes } => sendrecv((r + 1) % p, *bytes, (r + p - 1) % p),
            Tail::Xor { i, bytes } => {
                let peer = r ^ *i;
                *i += 1;
                sendrecv(peer, *bytes, peer)
            }
            Tail::Shift { i, bytes } => {
                let op = sendrecv((r + *i) % p, *bytes, (r + p - *i) % p);
                *i += 1;
                op
            }
            Tail::BcastRing {
                src,
                piece,
                nbytes,
                root,
            } => {
                let idx = ((*src + p - *root) % p) as u64;
                let count = (*piece).min(nbytes.saturating_sub(idx * *piece));
                *src = (*src + p - 1) % p;
                sendrecv((r + 1) % p, count, (r + p - 1) % p)
            }
            Tail::LinearRecv { next, root } => {
                if *next == *root {
                    *next += 1;
                }
                let op = recv(*next);
                *next += 1;
                op
            }
            Tail::LinearSend { next, root, bytes } => {
                if *next == *root {
                    *next += 1;
                }
                let op = send(*next, *bytes);
                *next += 1;
                op
            }
        })
    }

    /// Every remaining operation (tests and small jobs).
    pub fn collect_all(mut self, p: usize, rank: usize) -> Vec<Op> {
        std::iter::from_fn(|| self.next(p, rank)).collect()
    }
}

/// MPICH's binomial scatter of a bcast buffer in `ceil(nbytes / p)` pieces: rank
/// `rank`'s part of it.
fn scatter_for_bcast(p: usize, nbytes: u64, root: usize, rank: usize, list: &mut Vec<Op>) {
    let piece = nbytes.div_ceil(p as u64);
    let rel = (rank + p - root) % p;
    // what relative rank `rel` holds after its receive: its parent sent it
    // `curr_parent - piece * mask` where the parent's running total decreases
    // with each child sent; recomputed from the root down the tree
    let held = |rel: usize| -> u64 { bcast_scatter_held(p, nbytes, piece, rel) };
    let mut curr = 0u64;
    let mut mask = 1;
    while mask < p {
        if rel & mask != 0 {
            if nbytes as i128 - rel as i128 * piece as i128 > 0 {
                list.push(recv((rank + p - mask) % p));
                curr = held(rel);
            }
            break;
        }
        mask <<= 1;
    }
    if rel == 0 {
        curr = nbytes;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < p {
            let size = curr as i128 - (piece as i128) * mask as i128;
            if size > 0 {
                list.push(send((rank + mask) % p, size as u64));
                curr -= size as u64;
            }
        }
        mask >>= 1;
    }
}

/// Bytes relative rank `rel` receives in the bcast scatter (0 if none): walk from the
/// root down the binomial tree to `rel`, replaying each ancestor's sends.
fn bcast_scatter_held(p: usize, nbytes: u64, piece: u64, rel: usize) -> u64 {
    if rel == 0 {
        return nbytes;
    }
    // the parent of rel is rel minus its lowest set bit
    let low = rel & rel.wrapping_neg();
    let parent = rel - low;
    let mut curr = bcast_scatter_held(p, nbytes, piece, parent) as i128;
    // the parent sends to children parent + mask for masks below its own low bit,
    // from the largest down; rel is parent + low
    let top = if parent == 0 {
        pof2_ceil(p) >> 1
    } else {
        (parent & parent.wrapping_neg()) >> 1
    };
    let mut mask = top;
    while mask > 0 {
        if parent + mask < p {
            let size = curr - piece as i128 * mask as i128;
            if mask == low {
                return if size > 0 { size as u64 } else { 0 };
            }
            if size > 0 {
                curr -= size;
            }
        }
        mask >>= 1;
    }
    0
}

fn pof2_ceil(p: usize) -> usize {
    p.next_power_of_two()
}

/// Open MPI's in-order binomial tree: parent and children of virtual rank `v`.
fn in_order_children(v: usize, p: usize) -> (Option<usize>, Vec<usize>) {
    let mut kids = vec![];
    let mut mask = 1;
    while mask < p {
        let remote = v ^ mask;
        if remote < v {
            return (Some(remote), kids);
        }
        if remote < p {
            kids.push(remote);
        }
        mask <<= 1;
    }
    (None, kids)
}

/// Non-powers of two: the first `2 * rem` ranks fold in pairs (even sends to odd).
fn fold_in(list: &mut Vec<Op>, rank: usize, rem: usize, nbytes: u64) -> Option<usize> {
    if rank >= 2 * rem {
        return Some(rank - rem);
    }
    if rank % 2 == 0 {
        list.push(send(rank + 1, nbytes));
        return None;
    }
    list.push(recv(rank - 1));
    Some(rank / 2)
}

fn real_rank(newrank: usize, rem: usize) -> usize {
    if newrank < rem {
        newrank * 2 + 1
    } else {
        newrank + rem
    }
}

fn halving_counts(count: u64, pof2: usize) -> Vec<u64> {
    let base = count / pof2 as u64;
    let mut c = vec![base; pof2];
    c[pof2 - 1] = count - base * (pof2 as u64 - 1);
    c
}

fn sum(c: &[u64], a: usize, b: usize) -> u64 {
    if a >= b {
        0
    } else {
        c[a..b].iter().sum()
    }
}

/// Recursive halving among `pof2` virtual ranks: (send_idx, last_idx) after it.
fn reduce_scatter_halving(
    newrank: usize,
    pof2: usize,
    cnts: &[u64],
    real: &dyn Fn(usize) -> usize,
    elem: u64,
    list: &mut Vec<Op>,
) -> (usize, usize) {
    let (mut mask, mut send_idx, mut recv_idx, mut last_idx) = (1usize, 0usize, 0usize, pof2);
    while mask < pof2 {
        let newdst = newrank ^ mask;
        let send_cnt;
        if newrank < newdst {
            send_idx = recv_idx + pof2 / (mask * 2);
            send_cnt = sum(cnts, send_idx, last_idx);
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            send_cnt = sum(cnts, send_idx, recv_idx);
        }
        let dst = real(newdst);
        list.push(sendrecv(dst, send_cnt * elem, dst));
        send_idx = recv_idx;
        mask <<= 1;
        if mask < pof2 {
            last_idx = recv_idx + pof2 / mask;
        }
    }
    (send_idx, last_idx)
}

/// One doubling step: (recv_idx, last_idx, elements to send).
fn doubling_indices(
    newrank: usize,
    newdst: usize,
    mask: usize,
    pof2: usize,
    cnts: &[u64],
    send_idx: usize,
    mut last_idx: usize,
) -> (usize, usize, u64) {
    if newrank < newdst {
        if mask != pof2 / 2 {
            last_idx += pof2 / (mask * 2);
        }
        let recv_idx = send_idx + pof2 / (mask * 2);
        return (recv_idx, last_idx, sum(cnts, send_idx, recv_idx));
    }
    // Python's negative start of a slice counts from the end; these indices stay
    // non-negative in every reachable state (send_idx >= pof2 / (2 mask) here)
    let recv_idx = send_idx - pof2 / (mask * 2);
    (recv_idx, last_idx, sum(cnts, send_idx, last_idx))
}

fn allreduce_rabenseifner(p: usize, nbytes: u64, elem: u64, rank: usize, list: &mut Vec<Op>) {
    let count = nbytes / elem;
    let pof2 = pof2_floor(p);
    let rem = p - pof2;
    let cnts = halving_counts(count, pof2);
    let real = |nd: usize| real_rank(nd, rem);
    if let Some(newrank) = fold_in(list, rank, rem, nbytes) {
        let (mut send_idx, mut last_idx) =
            reduce_scatter_halving(newrank, pof2, &cnts, &real, elem, list);
        let mut mask = pof2 >> 1;
        while mask > 0 {
            let newdst = newrank ^ mask;
            let dst = real(newdst);
            let (recv_idx, li, send_cnt) =
                doubling_indices(newrank, newdst, mask, pof2, &cnts, send_idx, last_idx);
            last_idx = li;
            list.push(sendrecv(dst, send_cnt * elem, dst));
            if newrank > newdst {
                send_idx = recv_idx;
            }
            mask >>= 1;
        }
    }
    if rank < 2 * rem {
        list.push(if rank % 2 == 1 {
            send(rank - 1, nbytes)
        } else {
            recv(rank + 1)
        });
    }
}

fn reduce_rabenseifner(
    p: usize,
    nbytes: u64,
    root: usize,
    elem: u64,
    rank: usize,
    list: &mut Vec<Op>,
) {
    let count = nbytes / elem;
    if count == 0 {
        return; // SMPI returns at once
    }
    // fewer elements than ranks (a power of two, after check): SMPI pads to p
    let count = count.max(p as u64);
    let pof2 = pof2_floor(p);
    let rem = p - pof2;
    let cnts = halving_counts(count, pof2);
    let real = |nd: usize| if nd < rem { nd * 2 } else { nd + rem };
    let newroot = if root < 2 * rem {
        if root % 2 == 1 {
            0
        } else {
            root / 2
        }
    } else {
        root - rem
    };
    let levels = pof2.trailing_zeros() as i64;
    let mut newrank: Option<usize>;
    if rank < 2 * rem {
        if rank % 2 == 1 {
            list.push(send(rank - 1, nbytes));
            newrank = None;
        } else {
            list.push(recv(rank + 1));
            newrank = Some(rank / 2);
        }
    } else {
        newrank = Some(rank - rem);
    }
    let (mut send_idx, mut last_idx) = (0, 0);
    if let Some(nr) = newrank {
        (send_idx, last_idx) = reduce_scatter_halving(nr, pof2, &cnts, &real, elem, list);
    }
    if root < 2 * rem && root % 2 == 1 {
        if rank == root {
            list.push(recv(0));
            newrank = Some(0);
            send_idx = 0;
            last_idx = 2;
        } else if newrank == Some(0) {
            list.push(send(root, cnts[0] * elem));
            newrank = None;
        }
    }
    let Some(nr) = newrank else { return };
    let (mut mask, mut j) = (pof2 >> 1, levels - 1);
    while mask > 0 {
        let newdst = nr ^ mask;
        let mut dst = real(newdst);
        if newdst == 0 && root < 2 * rem && root % 2 == 1 {
            dst = root;
        }
        let (recv_idx, li, send_cnt) =
            doubling_indices(nr, newdst, mask, pof2, &cnts, send_idx, last_idx);
        last_idx = li;
        let sh = j.max(0) as u32;
        if (newdst >> sh) << sh == (newroot >> sh) << sh {
            list.push(send(dst, send_cnt * elem));
            break;
        }
        list.push(recv(dst));
        if nr > newdst {
            send_idx = recv_idx;
        }
        mask >>= 1;
        j -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(c: Collective, p: usize) -> Vec<Vec<Op>> {
        (0..p).map(|r| c.cursor(p, r).collect_all(p, r)).collect()
    }

    fn coll(algo: Algo, bytes: u64, root: usize) -> Collective {
        Collective {
            algo,
            bytes,
            root,
            elem_bytes: 1,
            job: JobChoices::default(),
        }
    }

    /// Every send is matched by a receive at its peer, in order, per pair.
    fn balanced(progs: &[Vec<Op>]) {
        let p = progs.len();
        let mut sends = vec![vec![0usize; p]; p];
        let mut recvs = vec![vec![0usize; p]; p];
        for (r, prog) in progs.iter().enumerate() {
            for op in prog {
                if let Some((d, _)) = op.send {
                    sends[r][d as usize] += 1;
                }
                match op.recv {
                    Some(FROM_ALL) => (0..p).filter(|&s| s != r).for_each(|s| recvs[s][r] += 1),
                    Some(s) => recvs[s as usize][r] += 1,
                    None => {}
                }
            }
        }
        assert_eq!(sends, recvs);
    }

    #[test]
    fn binomial_bcast_on_eight_ranks_is_a_tree() {
        let progs = all(coll(Algo::BcastBinomial, 100, 0), 8);
        assert_eq!(progs[0], vec![send(4, 100), send(2, 100), send(1, 100)]);
        assert_eq!(progs[6], vec![recv(4), send(7, 100)]);
        balanced(&progs);
    }

    #[test]
    fn every_algorithm_balances_on_odd_and_even_counts() {
        use Algo::*;
        for p in [2usize, 3, 5, 8, 12, 13, 16] {
            for algo in [
                BcastBinomial,
                BcastScatterAllgather,
                ReduceBinomial,
                ReduceRabenseifner,
                AllreduceRecursiveDoubling,
                AllreduceRabenseifner,
                AlltoallBruck,
                AlltoallRing,
                AllgatherRing,
                AllgatherRecursiveDoubling,
                AllgatherBruck,
                GatherBinomial,
                GatherLinear,
                ScatterBinomial,
                ScatterLinear,
                BarrierDissemination,
                BarrierRecursiveDoubling,
            ] {
                let c = coll(algo, 960, p / 2);
                c.check(p).unwrap();
                balanced(&all(c, p));
            }
        }
        for p in [2usize, 4, 16] {
            balanced(&all(coll(Algo::AlltoallPairwise, 64, 0), p));
            balanced(&all(coll(Algo::ReduceRabenseifner, 64, 1), p));
        }
        balanced(&all(coll(Algo::AllreduceRing, 12 * 40, 0), 12));
        // what the ring leaves over, with SMPI's and other reduces and bcasts
        for p in [2usize, 5, 12, 13] {
            for bytes in [0, 1, 7, 12 * 40 + 5, 13 * 40 + 12] {
                for (reduce, bcast) in [
                    (ReduceNonblockingLinear, BcastBinomial),
                    (ReduceBinomial, BcastScatterAllgather),
                ] {
                    let c = Collective {
                        job: JobChoices { reduce, bcast },
                        ..coll(AllreduceRing, bytes, 0)
                    };
                    c.check(p).unwrap();
                    balanced(&all(c, p));
                }
            }
            balanced(&all(coll(ReduceNonblockingLinear, 64, p - 1), p));
        }
    }

    #[test]
    fn a_ring_passes_its_leftover_to_the_jobs_reduce_then_bcast() {
        use Algo::*;
        // 4 ranks, 10 elements: 6 ring steps of 2 elements, then 2 left over
        let progs = all(coll(AllreduceRing, 10, 0), 4);
        assert_eq!(progs[0][..6], [sendrecv(1, 2, 3); 6]);
        assert_eq!(progs[0][6..], [recv_all(), send(2, 2), send(1, 2)]);
        assert_eq!(progs[3][6..], [send(0, 2), recv(2)]);
        // fewer elements than ranks: no ring at all
        let c = Collective {
            job: JobChoices {
                reduce: ReduceBinomial,
                bcast: BcastBinomial,
            },
            ..coll(AllreduceRing, 3, 0)
        };
        assert_eq!(all(c, 4)[0], [recv(1), recv(2), send(2, 3), send(1, 3)]);
    }

    #[test]
    fn refusals_match_the_python_expansion() {
        let e = coll(Algo::AlltoallPairwise, 8, 0).check(12).unwrap_err();
        assert!(e.contains("power-of-two rank count, got 12"), "{e}");
        let ring = Collective {
            job: JobChoices {
                reduce: Algo::ReduceRabenseifner,
                bcast: Algo::BcastBinomial,
            },
            ..coll(Algo::AllreduceRing, 100, 0)
        };
        ring.check(4).unwrap(); // nothing left over
        ring.check(16).unwrap(); // 4 left over, padded to 16 on a power of two
        let e = ring.check(12).unwrap_err(); // 4 left over on 12 ranks: SMPI aborts
        assert!(
            e.starts_with(
                "allreduce ring passes its 4 leftover elements to the job's reduce rabenseifner"
            ),
            "{e}"
        );
        let e = coll(Algo::BcastBinomial, 8, 9).check(4).unwrap_err();
        assert!(e.starts_with("root 9 is not a rank"), "{e}");
    }

    #[test]
    fn reduces_follow_smpi_on_empty_and_short_buffers() {
        use Algo::*;
        // SMPI's binomial and scatter_gather return at once when count == 0
        for p in [4usize, 5, 12] {
            for algo in [ReduceBinomial, ReduceRabenseifner] {
                let c = coll(algo, 0, 1);
                c.check(p).unwrap();
                assert!(all(c, p).iter().all(|l| l.is_empty()), "{algo:?} {p}");
            }
        }
        // fewer elements than ranks on a power of two: padded to one per rank
        let short = coll(ReduceRabenseifner, 3, 1);
        short.check(8).unwrap();
        assert_eq!(all(short, 8), all(coll(ReduceRabenseifner, 8, 1), 8));
        // elsewhere SMPI's folding step aborts (MPI_ERR_TRUNCATE)
        let e = coll(ReduceRabenseifner, 4, 0).check(5).unwrap_err();
        assert!(
            e.starts_with(
                "reduce rabenseifner on a non-power-of-two rank count needs at least one \
                 element per rank: 4 elements for 5 ranks"
            ),
            "{e}"
        );
        coll(ReduceRabenseifner, 5, 0).check(5).unwrap();
        // 5 ranks: rank 1 folds into 0, then 4 ranks halve and gather to the root 0
        let f = all(coll(ReduceRabenseifner, 8, 0), 5);
        assert_eq!(f[1], [send(0, 8)]);
        assert_eq!(f[0][0], recv(1));
        balanced(&f);
    }

    #[test]
    fn allgathers_on_six_ranks() {
        use Algo::*;
        // Bruck: 1 block to rank - 1, 2 to rank - 2, then the p - 4 = 2 left to rank - 4
        let b = all(coll(AllgatherBruck, 10, 0), 6);
        assert_eq!(
            b[1],
            [sendrecv(0, 10, 2), sendrecv(5, 20, 3), sendrecv(3, 20, 5)]
        );
        // recursive doubling: groups {0..3} and {4, 5}; 2 and 3 have no partner at
        // mask 4, so 0 and 1 pass them the 2 blocks of {4, 5}
        let d = all(coll(AllgatherRecursiveDoubling, 10, 0), 6);
        assert_eq!(
            d[0],
            [
                sendrecv(1, 10, 1),
                sendrecv(2, 20, 2),
                sendrecv(4, 40, 4),
                send(2, 20)
            ]
        );
        assert_eq!(d[3], [sendrecv(2, 10, 2), sendrecv(1, 20, 1), recv(1)]);
        assert_eq!(d[5], [sendrecv(4, 10, 4), sendrecv(1, 20, 1)]);
        // alltoall ring: one block to rank + i, from rank - i
        let a = all(coll(AlltoallRing, 10, 0), 6);
        assert_eq!(a[4][..2], [sendrecv(5, 10, 3), sendrecv(0, 10, 2)]);
        assert_eq!(a[4].len(), 5);
    }

    #[test]
    fn bruck_block_counts() {
        for p in 2..40 {
            let mut b = 1;
            while b < p {
                let want = (1..p).filter(|i| i & b != 0).count();
                assert_eq!(count_with_bit(p, b), want, "p={p} bit={b}");
                b *= 2;
            }
        }
    }

    #[test]
    fn lists_are_freed_when_exhausted() {
        let c = coll(Algo::BcastBinomial, 1, 0);
        let mut cur = c.cursor(8, 0);
        while cur.next(8, 0).is_some() {}
        assert_eq!(cur.list.capacity(), 0);
    }
}
