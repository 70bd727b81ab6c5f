//! The event queue: events bucketed by instant.
//!
//! Many events share an instant (every flow of a collective step is released, and
//! often ends, at the same nanosecond), so a sorted map of instants, each holding
//! its events in insertion order, costs far fewer comparisons than one heap entry
//! per event. Insertion order within an instant keeps runs deterministic.

use std::collections::BTreeMap;

use crate::Ns;

pub struct EventQueue<E> {
    buckets: BTreeMap<Ns, Vec<E>>,
    spare: Vec<Vec<E>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            buckets: BTreeMap::new(),
            spare: Vec::new(),
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
        let mut v = self.spare.pop().unwrap_or_default();
        v.push(e);
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
    pub fn recycle(&mut self, mut v: Vec<E>) {
        v.clear();
        self.spare.push(v);
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
}
