//! The event queue: events bucketed by instant.
//!
//! Many events share an instant (every flow of a collective step is released, and
//! often ends, at the same nanosecond), so a sorted map of instants, each holding
//! its events in insertion order, costs far fewer comparisons than one heap entry
//! per event. Insertion order within an instant keeps runs deterministic.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::Ns;

/// Drained buckets kept for reuse, so a new instant allocates nothing: shared by
/// both queues.
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

/// The same queue for events that often have an instant to themselves (a flow's
/// finish, at its rate's whole ns): the instants in a binary heap and their
/// buckets in a hash map, so a new instant costs a heap push instead of a tree
/// insertion, and an event at an instant already there a hash look-up. The pops
/// are [`EventQueue`]'s: instants in order, each one's events in insertion order.
pub struct HeapQueue<E> {
    instants: BinaryHeap<Reverse<Ns>>,
    buckets: HashMap<Ns, Vec<E>, BuildHasherDefault<NsHasher>>,
    spare: Spare<E>,
}

/// A multiplicative hash of an instant (the map's keys are the clock's ns).
#[derive(Default)]
pub struct NsHasher(u64);

impl Hasher for NsHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

impl<E> Default for HeapQueue<E> {
    fn default() -> Self {
        HeapQueue {
            instants: BinaryHeap::new(),
            buckets: HashMap::default(),
            spare: Spare::default(),
        }
    }
}

impl<E> HeapQueue<E> {
    /// Schedule `e` at `t`, after everything already scheduled at `t`.
    pub fn push(&mut self, t: Ns, e: E) {
        if let Some(v) = self.buckets.get_mut(&t) {
            v.push(e);
            return;
        }
        let v = self.spare.bucket(e);
        self.buckets.insert(t, v);
        self.instants.push(Reverse(t));
    }

    /// The earliest instant with events.
    pub fn first_time(&self) -> Option<Ns> {
        self.instants.peek().map(|r| r.0)
    }

    /// Remove and return the earliest instant's events, in insertion order.
    pub fn pop_instant(&mut self) -> Option<(Ns, Vec<E>)> {
        let Reverse(t) = self.instants.pop()?;
        let v = self.buckets.remove(&t).expect("every instant has its bucket");
        Some((t, v))
    }

    /// Give back a drained bucket for reuse.
    pub fn recycle(&mut self, v: Vec<E>) {
        self.spare.give(v);
    }

    /// Drop every instant after `t`.
    pub fn truncate_after(&mut self, t: Ns) {
        if self.instants.iter().any(|r| r.0 > t) {
            let kept: Vec<_> = std::mem::take(&mut self.instants)
                .into_vec()
                .into_iter()
                .filter(|r| r.0 <= t)
                .collect();
            self.instants = BinaryHeap::from(kept);
            let later: Vec<Ns> = self.buckets.keys().copied().filter(|&k| k > t).collect();
            for k in later {
                let v = self.buckets.remove(&k).expect("just listed");
                self.recycle(v);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.instants.is_empty()
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
    fn the_heap_queue_pops_as_the_bucket_queue_does() {
        // pseudo-random instants with many ties, interleaved pops and truncations
        let (mut a, mut b) = (EventQueue::default(), HeapQueue::default());
        let mut x: u64 = 12345;
        let mut id = 0u32;
        for round in 0..2000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let t = ((x >> 33) % 50) as Ns + round / 10;
            for _ in 0..(x >> 60) {
                id += 1;
                a.push(t, id);
                b.push(t, id);
            }
            if x % 3 == 0 {
                assert_eq!(a.first_time(), b.first_time());
                let (pa, pb) = (a.pop_instant(), b.pop_instant());
                assert_eq!(pa, pb);
                if let (Some((_, va)), Some((_, vb))) = (pa, pb) {
                    a.recycle(va);
                    b.recycle(vb);
                }
            }
            if x % 97 == 0 {
                a.truncate_after(round / 10 + 20);
                b.truncate_after(round / 10 + 20);
            }
        }
        while let Some(pa) = a.pop_instant() {
            assert_eq!(Some(pa), b.pop_instant());
        }
        assert!(b.is_empty());
    }
}
