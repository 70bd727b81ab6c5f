//! The event queue: events bucketed by instant.
//!
//! Many events share an instant (every flow of a collective step is released, and
//! often ends, at the same nanosecond), so a sorted map of instants, each holding
//! its events in insertion order, costs far fewer comparisons than one heap entry
//! per event. Insertion order within an instant keeps runs deterministic.
//!
//! A flow's finish is another kind of event: one per flow, moved whenever its rate
//! changes. [`KeyedQueue`] holds those.

use std::collections::BTreeMap;

use crate::Ns;

/// Drained buckets kept for reuse, so a new instant allocates nothing.
struct Spare<E>(Vec<Vec<E>>);

impl<E> Default for Spare<E> {
    fn default() -> Self {
        Spare(Vec::new())
    }
}

impl<E> Spare<E> {
    /// A bucket holding `e` alone.
    fn bucket(&mut self, e: E) -> Vec<E> {
        let mut v = self.0.pop().unwrap_or_default();
        v.push(e);
        v
    }

    fn give(&mut self, mut v: Vec<E>) {
        v.clear();
        self.0.push(v);
    }
}

pub struct EventQueue<E> {
    buckets: BTreeMap<Ns, Vec<E>>,
    spare: Spare<E>,
}

// by hand: a derive would ask `E: Default`
impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            buckets: BTreeMap::new(),
            spare: Spare::default(),
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedule `e` at `t`, after everything already scheduled at `t`.
    pub fn push(&mut self, t: Ns, e: E) {
        if let Some(v) = self.buckets.get_mut(&t) {
            v.push(e);
            return;
        }
        let v = self.spare.bucket(e);
        self.buckets.insert(t, v);
    }

    /// The earliest instant with events.
    pub fn first_time(&self) -> Option<Ns> {
        self.buckets.first_key_value().map(|(&t, _)| t)
    }

    /// Remove and return the earliest instant's events, in insertion order.
    pub fn pop_instant(&mut self) -> Option<(Ns, Vec<E>)> {
        self.buckets.pop_first()
    }

    /// Give back a drained bucket for reuse.
    pub fn recycle(&mut self, v: Vec<E>) {
        self.spare.give(v);
    }

    /// Drop every instant after `t`.
    pub fn truncate_after(&mut self, t: Ns) {
        let later = self.buckets.split_off(&(t.saturating_add(1)));
        for (_, v) in later {
            self.recycle(v);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

/// One pending event per key (a flow's finish), movable: re-scheduling a key drops
/// its old event. Pops come in order of instant, then of scheduling, which is the
/// order [`EventQueue`] gives the live events of a flow-versioned queue.
///
/// Events scheduled one after another at the same instant (a solve giving a
/// collective step's flows one finish) share a group, and the groups sit in a
/// binary heap of packed (instant, sequence) keys: a step costs one heap entry, as
/// buckets by instant would, and a contended run, which re-schedules most finishes
/// several times, each at an instant of its own, moves its one-event group in
/// place: no stale event is left to pop, and no instant is hashed.
#[derive(Default)]
pub struct KeyedQueue {
    // the heap of groups: packed keys and, beside them, the group
    keys: Vec<u128>,
    heap_group: Vec<u32>,
    // per group: its place in the heap, its keys in order (GONE once dropped), how
    // many are live; groups free for reuse
    place_of: Vec<u32>,
    members: Vec<Vec<u32>>,
    live: Vec<u32>,
    free: Vec<u32>,
    // per key: (group, index in its members), or (NONE, 0)
    at: Vec<(u32, u32)>,
    seq: u64,
    // the group the last `set` went to, and its instant: the next one may join it
    last: Option<(u32, Ns)>,
}

const NONE: u32 = u32::MAX;
const GONE: u32 = u32::MAX;

/// (instant, sequence) as one integer in the same order.
#[inline]
fn pack(t: Ns, seq: u64) -> u128 {
    (((t as u64) ^ (1 << 63)) as u128) << 64 | seq as u128
}

#[inline]
fn instant(key: u128) -> Ns {
    (((key >> 64) as u64) ^ (1 << 63)) as Ns
}

impl KeyedQueue {
    /// Schedule key `k` at `t`, replacing its pending event if it has one.
    pub fn set(&mut self, k: u32, t: Ns) {
        let ku = k as usize;
        if self.at.len() <= ku {
            self.at.resize(ku + 1, (NONE, 0));
        }
        self.seq += 1;
        let (g, _) = self.at[ku];
        if g != NONE {
            if self.members[g as usize].len() == 1 {
                // alone in its group (the contended case): move the group
                let i = self.place_of[g as usize] as usize;
                let (old, new) = (self.keys[i], pack(t, self.seq));
                self.keys[i] = new;
                if old < new {
                    self.down(i);
                } else {
                    self.up(i);
                }
                self.last = Some((g, t));
                return;
            }
            self.drop_key(k);
        }
        if let Some((g, lt)) = self.last {
            if lt == t {
                // right after the last one, at its instant: same place in the order
                let m = &mut self.members[g as usize];
                self.at[ku] = (g, m.len() as u32);
                m.push(k);
                self.live[g as usize] += 1;
                return;
            }
        }
        let g = match self.free.pop() {
            Some(g) => g,
            None => {
                self.members.push(Vec::new());
                self.live.push(0);
                self.place_of.push(NONE);
                (self.members.len() - 1) as u32
            }
        };
        self.members[g as usize].push(k);
        self.live[g as usize] = 1;
        self.at[ku] = (g, 0);
        self.keys.push(pack(t, self.seq));
        self.heap_group.push(g);
        self.up(self.keys.len() - 1);
        self.last = Some((g, t));
    }

    /// Drop key `k`'s pending event, if any.
    pub fn remove(&mut self, k: u32) {
        if self.at.get(k as usize).is_some_and(|&(g, _)| g != NONE) {
            self.drop_key(k);
        }
    }

    /// The earliest instant with an event.
    pub fn first_time(&self) -> Option<Ns> {
        self.keys.first().map(|&key| instant(key))
    }

    /// Whether any key with an event satisfies `pick`. The heap's order puts the
    /// earliest group first, so the keys due first are tried first.
    pub fn any_key(&self, pick: &dyn Fn(u32) -> bool) -> bool {
        self.heap_group.iter().any(|&g| {
            self.members[g as usize]
                .iter()
                .any(|&k| k != GONE && pick(k))
        })
    }

    /// Remove the events at the earliest instant if it is `t`, appending their keys
    /// to `out` in the order they were scheduled.
    pub fn pop_at(&mut self, t: Ns, out: &mut Vec<u32>) {
        while self.first_time() == Some(t) {
            let g = self.heap_group[0];
            for &k in &self.members[g as usize] {
                if k != GONE {
                    self.at[k as usize] = (NONE, 0);
                    out.push(k);
                }
            }
            self.drop_group(g);
        }
    }

    /// Drop every event after `t`.
    pub fn truncate_after(&mut self, t: Ns) {
        let later: Vec<u32> = (0..self.keys.len())
            .filter(|&i| instant(self.keys[i]) > t)
            .map(|i| self.heap_group[i])
            .collect();
        for g in later {
            for &k in &self.members[g as usize] {
                if k != GONE {
                    self.at[k as usize] = (NONE, 0);
                }
            }
            self.drop_group(g);
        }
    }

    fn drop_key(&mut self, k: u32) {
        let (g, j) = self.at[k as usize];
        self.at[k as usize] = (NONE, 0);
        self.members[g as usize][j as usize] = GONE;
        self.live[g as usize] -= 1;
        if self.live[g as usize] == 0 {
            self.drop_group(g);
        }
    }

    fn drop_group(&mut self, g: u32) {
        let i = self.place_of[g as usize] as usize;
        self.remove_at(i);
        self.members[g as usize].clear();
        self.free.push(g);
        if self.last.is_some_and(|(l, _)| l == g) {
            self.last = None;
        }
    }

    /// The smaller child of heap entry `i`, if it has one (a branch-free choice).
    #[inline]
    fn least_child(&self, i: usize) -> Option<usize> {
        let (l, n) = (2 * i + 1, self.keys.len());
        (l < n).then(|| {
            if l + 1 < n {
                l + (self.keys[l + 1] < self.keys[l]) as usize
            } else {
                l
            }
        })
    }

    fn place(&mut self, i: usize, key: u128, g: u32) {
        self.keys[i] = key;
        self.heap_group[i] = g;
        self.place_of[g as usize] = i as u32;
    }

    fn remove_at(&mut self, i: usize) {
        self.place_of[self.heap_group[i] as usize] = NONE;
        let key = self.keys.pop().expect("an entry to remove");
        let g = self.heap_group.pop().expect("beside its key");
        if i == self.keys.len() {
            return;
        }
        // bottom-up: the hole at `i` goes down to a leaf along the smaller children,
        // then the last entry fills it and rises
        let mut h = i;
        while let Some(c) = self.least_child(h) {
            let (ck, cg) = (self.keys[c], self.heap_group[c]);
            self.place(h, ck, cg);
            h = c;
        }
        self.place(h, key, g);
        self.up(h);
    }

    fn up(&mut self, mut i: usize) {
        let (key, g) = (self.keys[i], self.heap_group[i]);
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.keys[parent] <= key {
                break;
            }
            let (pk, pg) = (self.keys[parent], self.heap_group[parent]);
            self.place(i, pk, pg);
            i = parent;
        }
        self.place(i, key, g);
    }

    fn down(&mut self, mut i: usize) {
        let (key, g) = (self.keys[i], self.heap_group[i]);
        while let Some(c) = self.least_child(i) {
            if key <= self.keys[c] {
                break;
            }
            let (ck, cg) = (self.keys[c], self.heap_group[c]);
            self.place(i, ck, cg);
            i = c;
        }
        self.place(i, key, g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_come_in_order_and_events_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, 'a');
        q.push(1, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        assert_eq!(q.first_time(), Some(1));
        let got: Vec<(Ns, Vec<char>)> = std::iter::from_fn(|| q.pop_instant()).collect();
        assert_eq!(
            got,
            vec![(1, vec!['b']), (3, vec!['d']), (5, vec!['a', 'c'])]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn truncate_drops_only_later_instants() {
        let mut q = EventQueue::default();
        for t in [1, 2, 3, 4] {
            q.push(t, t);
        }
        q.truncate_after(2);
        let times: Vec<Ns> = std::iter::from_fn(|| q.pop_instant())
            .map(|(t, _)| t)
            .collect();
        assert_eq!(times, vec![1, 2]);
    }

    #[test]
    fn the_keyed_queue_pops_the_live_events_of_a_versioned_queue() {
        // each key re-scheduled or dropped at random; the bucket queue of versioned events,
        // its stale events skipped, is the reference
        let (mut a, mut b) = (EventQueue::default(), KeyedQueue::default());
        let mut version = vec![0u32; 64];
        let mut live = vec![false; 64];
        let mut x: u64 = 99;
        let mut now: Ns = 0;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = ((x >> 40) % 64) as usize;
            match (x >> 20) % 8 {
                0 => {
                    version[k] += 1;
                    live[k] = false;
                    b.remove(k as u32);
                }
                1 | 2 => {
                    let mut got = vec![];
                    if let Some(t) = b.first_time() {
                        now = t;
                        b.pop_at(t, &mut got);
                    }
                    let mut want = vec![];
                    while let Some(t) = a.first_time() {
                        if !want.is_empty() && t != now || t > now {
                            break;
                        }
                        let (_, batch) = a.pop_instant().unwrap();
                        for &(kk, v) in &batch {
                            if live[kk as usize] && version[kk as usize] == v {
                                want.push(kk);
                                live[kk as usize] = false;
                            }
                        }
                        a.recycle(batch);
                    }
                    assert_eq!(got, want);
                }
                3 => {
                    // a burst at one instant (a collective step's flows ending together)
                    let t = now + 1 + ((x >> 50) % 2) as Ns;
                    for j in 0..24 {
                        let k = (k + j * 7) % 64;
                        version[k] += 1;
                        live[k] = true;
                        a.push(t, (k as u32, version[k]));
                        b.set(k as u32, t);
                    }
                }
                _ => {
                    let t = now + ((x >> 50) % 16) as Ns;
                    version[k] += 1;
                    live[k] = true;
                    a.push(t, (k as u32, version[k]));
                    b.set(k as u32, t);
                }
            }
        }
    }
}
