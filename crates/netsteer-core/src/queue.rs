//! The event queue: events bucketed by instant.
//!
//! Many events share an instant (every flow of a collective step is released, and
//! often ends, at the same nanosecond), so a sorted map of instants, each holding
//! its events in insertion order, costs far fewer comparisons than one heap entry
//! per event. Insertion order within an instant keeps runs deterministic.

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

/// One pending event per key (a flow's finish), movable: re-scheduling a key moves
/// its entry instead of leaving a stale one behind. Pops come in order of instant,
/// then of the last scheduling, which is the order [`EventQueue`] gives the live
/// events of a flow-versioned queue; a rate that changes often (a contended run
/// re-schedules most finishes several times) then costs no stale pops.
#[derive(Default)]
pub struct KeyedQueue {
    // a binary min-heap of (instant, scheduling sequence, key)
    heap: Vec<(Ns, u64, u32)>,
    // per key, its entry's position in `heap`, or NONE
    pos: Vec<u32>,
    seq: u64,
}

const NONE: u32 = u32::MAX;

impl KeyedQueue {
    /// Schedule key `k` at `t`, replacing its pending event if it has one.
    pub fn set(&mut self, k: u32, t: Ns) {
        let ku = k as usize;
        if self.pos.len() <= ku {
            self.pos.resize(ku + 1, NONE);
        }
        self.seq += 1;
        let entry = (t, self.seq, k);
        let i = self.pos[ku];
        if i == NONE {
            self.heap.push(entry);
            let i = self.heap.len() - 1;
            self.pos[ku] = i as u32;
            self.up(i);
        } else {
            let i = i as usize;
            let older = self.heap[i] < entry;
            self.heap[i] = entry;
            if older {
                self.down(i);
            } else {
                self.up(i);
            }
        }
    }

    /// Drop key `k`'s pending event, if any.
    pub fn remove(&mut self, k: u32) {
        let Some(&i) = self.pos.get(k as usize) else { return };
        if i == NONE {
            return;
        }
        self.pos[k as usize] = NONE;
        let i = i as usize;
        let last = self.heap.pop().expect("a key with a position is in the heap");
        if i < self.heap.len() {
            let out = self.heap[i];
            self.heap[i] = last;
            self.pos[last.2 as usize] = i as u32;
            if last < out {
                self.up(i);
            } else {
                self.down(i);
            }
        }
    }

    /// The earliest instant with an event.
    pub fn first_time(&self) -> Option<Ns> {
        self.heap.first().map(|e| e.0)
    }

    /// Remove the events at the earliest instant if it is `t`, appending their keys
    /// to `out` in the order they were scheduled.
    pub fn pop_at(&mut self, t: Ns, out: &mut Vec<u32>) {
        while let Some(&(first, _, k)) = self.heap.first() {
            if first != t {
                break;
            }
            self.remove(k);
            out.push(k);
        }
    }

    /// Drop every event after `t`.
    pub fn truncate_after(&mut self, t: Ns) {
        let later: Vec<u32> = self.heap.iter().filter(|e| e.0 > t).map(|e| e.2).collect();
        for k in later {
            self.remove(k);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent] <= e {
                break;
            }
            self.heap[i] = self.heap[parent];
            self.pos[self.heap[i].2 as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = e;
        self.pos[e.2 as usize] = i as u32;
    }

    fn down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && self.heap[l + 1] < self.heap[l] { l + 1 } else { l };
            if e <= self.heap[c] {
                break;
            }
            self.heap[i] = self.heap[c];
            self.pos[self.heap[i].2 as usize] = i as u32;
            i = c;
        }
        self.heap[i] = e;
        self.pos[e.2 as usize] = i as u32;
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
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
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
