//! InfiniBand VL arbitration at one output port, as switches and HCAs do it.
//!
//! Two tables of `VL:weight` entries, high and low priority; a weight counts 64-byte
//! units (0-255, 0 skips the entry) and a packet costs its length in 64-byte units,
//! rounded up (the credits it takes: a 2074-byte packet counts 2112 bytes, so a
//! weight of 33 sends one such packet per turn, not two). The arbiter serves the
//! current entry of a table while its VL has a packet ready and weight is left; a
//! packet may overdraw the
//! weight, what it overdraws is not carried over; an entry whose VL has nothing
//! ready gives up its turn. The high table is served first, but once `high_limit`
//! x 4 KiB of high-priority bytes went out in a row, one low-priority packet gets
//! its chance if one is ready (limit 0: one high packet, then a chance; 255: no
//! limit). These are the IBA's VLArbitrationTable and LimitOfHighPriority, and
//! OpenSM's `qos_vlarb_high`, `qos_vlarb_low` and `qos_high_limit`.

/// The two tables and the limit of one port.
#[derive(Debug, Clone, PartialEq)]
pub struct VlArb {
    high: Vec<(u8, i64)>,
    low: Vec<(u8, i64)>,
    // bytes of high priority in a row before a low packet gets a chance (None: no limit)
    limit: Option<u64>,
}

/// Where an output port's arbiter stands.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArbState {
    hi_idx: u16,
    hi_left: i64,
    hi_fresh: bool,
    lo_idx: u16,
    lo_left: i64,
    lo_fresh: bool,
    hi_sent: u64,
}

impl VlArb {
    /// `high` and `low`: `(vl, weight)` entries in table order; `high_limit` in
    /// units of 4 KiB, 255 for no limit.
    ///
    /// ```
    /// use netsteer_core::packet::vlarb::VlArb;
    /// let arb = VlArb::new(&[], &[(0, 1), (1, 2)], 0);
    /// let mut st = Default::default();
    /// // 64-byte packets on both VLs: VL 0 gets one, VL 1 two, and so on
    /// let order: Vec<u8> = (0..6).map(|_| {
    ///     let (vl, high) = arb.pick(&mut st, 0b11).unwrap();
    ///     arb.charge(&mut st, high, 64);
    ///     vl
    /// }).collect();
    /// assert_eq!(order, vec![0, 1, 1, 0, 1, 1]);
    /// ```
    pub fn new(high: &[(u8, u8)], low: &[(u8, u8)], high_limit: u8) -> Self {
        let keep = |t: &[(u8, u8)]| -> Vec<(u8, i64)> {
            t.iter()
                .filter(|&&(_, w)| w > 0)
                .map(|&(v, w)| (v, w as i64 * 64))
                .collect()
        };
        VlArb {
            high: keep(high),
            low: keep(low),
            limit: (high_limit != 255).then_some(high_limit as u64 * 4096),
        }
    }

    /// VLs that appear with a weight in either table (bit `v` for VL `v`).
    pub fn served(&self) -> u16 {
        self.high
            .iter()
            .chain(&self.low)
            .fold(0u16, |m, &(v, _)| m | (1 << v))
    }

    /// The VL to send from next, among the VLs in `ready` (bit `v` for VL `v`), and
    /// whether it was picked from the high table; `None` if no entry can send.
    /// Call [`VlArb::charge`] with the packet's size once it is sent.
    pub fn pick(&self, st: &mut ArbState, ready: u16) -> Option<(u8, bool)> {
        let low_ready = self.low.iter().any(|&(v, _)| ready & (1 << v) != 0);
        let high_ok = match self.limit {
            None => true,
            Some(lim) => st.hi_sent == 0 || st.hi_sent < lim || !low_ready,
        };
        if high_ok {
            if let Some(v) = scan(
                &self.high,
                &mut st.hi_idx,
                &mut st.hi_left,
                &mut st.hi_fresh,
                ready,
            ) {
                return Some((v, true));
            }
        }
        scan(
            &self.low,
            &mut st.lo_idx,
            &mut st.lo_left,
            &mut st.lo_fresh,
            ready,
        )
        .map(|v| (v, false))
    }

    /// A packet of `bytes` on the wire went out from the entry [`VlArb::pick`]
    /// chose. It is counted in whole 64-byte units, as weights are (IBA: weights
    /// and packet lengths in 64-byte credits), against the entry's weight and the
    /// high-priority limit alike.
    pub fn charge(&self, st: &mut ArbState, high: bool, bytes: u32) {
        let bytes = bytes.div_ceil(64) * 64;
        if high {
            st.hi_left -= bytes as i64;
            st.hi_sent += bytes as u64;
        } else {
            st.lo_left -= bytes as i64;
            st.hi_sent = 0;
        }
    }
}

/// Serve the table from its current entry: the entry sends while weight is left and
/// its VL is ready; otherwise the turn passes to the next entry with a ready VL.
fn scan(
    t: &[(u8, i64)],
    idx: &mut u16,
    left: &mut i64,
    fresh: &mut bool,
    ready: u16,
) -> Option<u8> {
    if t.is_empty() {
        return None;
    }
    if !*fresh {
        *fresh = true;
        *idx = 0;
        *left = t[0].1;
    }
    let n = t.len();
    for _ in 0..=n {
        let v = t[*idx as usize].0;
        if *left > 0 && ready & (1 << v) != 0 {
            return Some(v);
        }
        *idx = ((*idx as usize + 1) % n) as u16;
        *left = t[*idx as usize].1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(arb: &VlArb, ready: u16, sizes: [u32; 16], n: usize) -> [u64; 16] {
        let mut st = ArbState::default();
        let mut out = [0u64; 16];
        for _ in 0..n {
            let (v, h) = arb.pick(&mut st, ready).unwrap();
            arb.charge(&mut st, h, sizes[v as usize]);
            out[v as usize] += sizes[v as usize] as u64;
        }
        out
    }

    #[test]
    fn low_weights_split_bytes_by_weight() {
        // 2 KiB packets; weights 32 (2 KiB) and 96 (6 KiB): 1 packet, then 3
        let arb = VlArb::new(&[], &[(0, 32), (1, 96)], 0);
        let out = run(&arb, 0b11, [2048; 16], 400);
        assert_eq!(out[0] * 3, out[1]);
    }

    #[test]
    fn packets_count_in_whole_64_byte_units() {
        // 2074-byte packets count 2112 bytes: weight 33 (2112 B) sends one per
        // turn and 99 (6336 B) three, 1:3 (charging 2074 would give 2 and 4, 1:2)
        let arb = VlArb::new(&[], &[(0, 33), (1, 99)], 0);
        let out = run(&arb, 0b11, [2074; 16], 400);
        assert_eq!(out[0] * 3, out[1]);
        // 255 (16320 B) sends 8, 85 (5440 B) 3
        let arb = VlArb::new(&[], &[(0, 255), (1, 85)], 0);
        let out = run(&arb, 0b11, [2074; 16], 1100);
        assert_eq!(out[0] * 3, out[1] * 8);
        // the high limit counts the same units: 17 x 4 KiB = 69632 B lets 33
        // packets of 2112 B go before a low one (34 of 2074 B would fit under it)
        let arb = VlArb::new(&[(1, 255)], &[(0, 255)], 17);
        let out = run(&arb, 0b11, [2074; 16], 3400);
        assert_eq!(out[1], 33 * out[0]);
    }

    #[test]
    fn an_idle_vl_gives_its_turn_away() {
        let arb = VlArb::new(&[], &[(0, 32), (1, 96)], 0);
        let out = run(&arb, 0b10, [2048; 16], 10);
        assert_eq!((out[0], out[1]), (0, 10 * 2048));
    }

    #[test]
    fn high_limit_leaves_one_low_packet_per_limit() {
        // limit 1 = 4 KiB: two 2 KiB high packets, then one low packet
        let arb = VlArb::new(&[(1, 255)], &[(0, 255)], 1);
        let out = run(&arb, 0b11, [2048; 16], 300);
        assert_eq!(out[1], 2 * out[0]);
        // limit 255: the high VL takes everything
        let arb = VlArb::new(&[(1, 255)], &[(0, 255)], 255);
        let out = run(&arb, 0b11, [2048; 16], 300);
        assert_eq!(out[0], 0);
    }

    #[test]
    fn zero_weights_are_skipped() {
        let arb = VlArb::new(&[(0, 0)], &[(0, 0), (1, 4)], 0);
        assert_eq!(arb.served(), 0b10);
        let mut st = ArbState::default();
        assert_eq!(arb.pick(&mut st, 0b01), None);
        assert_eq!(arb.pick(&mut st, 0b10), Some((1, false)));
    }
}
