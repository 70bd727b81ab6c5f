//! The packet fabric's parameters, with their units and their checks.

use crate::Ns;

/// Parameters of the packet-level fabric (the same for every port).
///
/// The VL arbitration and SL-to-VL parameters mean what OpenSM's QoS options
/// mean (`qos_max_vls`, `qos_high_limit`, `qos_vlarb_high`, `qos_vlarb_low`,
/// `qos_sl2vl`).
#[derive(Debug, Clone, PartialEq)]
pub struct PacketConfig {
    /// Payload bytes per packet (InfiniBand MTU: 256 B to 4 KiB, a power of two).
    pub mtu: u32,
    /// Header bytes added to every packet on the wire (LRH+BTH+ICRC+VCRC: 26 B).
    pub header: u32,
    /// Receive buffer per port and VL, bytes: the credits a sender starts with.
    pub buffer: u32,
    /// Data VLs configured, 1 to 15 (`qos_max_vls`).
    pub vls: u8,
    /// Time from a packet's head arriving at a switch to its forwarding, ns.
    pub switch_latency: Ns,
    /// Cut-through (forward once the head is in) or store-and-forward.
    pub cut_through: bool,
    /// `(vl, weight)` entries, weight in 64-byte units.
    pub vlarb_high: Vec<(u8, u8)>,
    pub vlarb_low: Vec<(u8, u8)>,
    /// High-priority bytes in a row before a low packet gets a chance, in 4 KiB
    /// units (255: no limit).
    pub high_limit: u8,
    /// VL of each SL; 15 marks an SL that may not be used.
    pub sl2vl: [u8; 16],
    /// RC transport timeout, ns: a sender that lost packets sends again from the
    /// first one its destination has not taken, this long after the last progress.
    /// Default: UCX's `UCX_RC_TIMEOUT` (1 s) as the HCA applies it, InfiniBand's
    /// local ACK timeout 4.096 us x 2^k with k = 18: 2^30 ns, about 1.07 s.
    pub rc_timeout: Ns,
}

/// InfiniBand's longest local ACK timeout, 4.096 us x 2^31 (about 2.4 hours), ns.
pub const MAX_RC_TIMEOUT: Ns = 4096 << 31;

impl Default for PacketConfig {
    /// 2 KiB MTU, 26 B headers, 16 KiB per port and VL (8 packets), one VL,
    /// 100 ns switches, cut-through, equal low-table weights, UCX's RC timeout.
    fn default() -> Self {
        PacketConfig {
            mtu: 2048,
            header: 26,
            buffer: 16 * 1024,
            vls: 1,
            switch_latency: 100,
            cut_through: true,
            vlarb_high: vec![],
            vlarb_low: vec![(0, 64)],
            high_limit: 0,
            sl2vl: [0; 16],
            rc_timeout: 1 << 30,
        }
    }
}

/// Bytes a packet takes in a receive buffer: credits count 64-byte blocks.
pub fn credit_bytes(wire: u32) -> u32 {
    wire.div_ceil(64) * 64
}

impl PacketConfig {
    /// The first problem found, as `(field, reason)`.
    ///
    /// ```
    /// use netsteer_core::packet::PacketConfig;
    /// let mut c = PacketConfig::default();
    /// c.mtu = 3000;
    /// assert_eq!(c.check().unwrap_err().0, "mtu");
    /// ```
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(256..=4096).contains(&self.mtu) || !self.mtu.is_power_of_two() {
            return Err((
                "mtu",
                format!(
                    "{} B is not an InfiniBand MTU: use a power of two from 256 B to 4 KiB",
                    self.mtu
                ),
            ));
        }
        if !(1..=15).contains(&self.vls) {
            return Err(("vls", format!("{} VLs: use 1 to 15 data VLs", self.vls)));
        }
        let packet = credit_bytes(self.mtu + self.header);
        if self.buffer < packet {
            return Err((
                "buffer",
                format!(
                    "{} B per port and VL is smaller than one packet ({} B of payload and header, in 64 B credits)",
                    self.buffer, packet
                ),
            ));
        }
        if self.switch_latency < 0 {
            return Err(("switch_latency", "a latency cannot be negative".into()));
        }
        if self.rc_timeout <= 0 {
            return Err((
                "rc_timeout",
                "a lost packet would never be sent again (InfiniBand's timeout 0 waits forever): \
                 give a positive time, e.g. 4.096us x 2^k"
                    .into(),
            ));
        }
        if self.rc_timeout > MAX_RC_TIMEOUT {
            return Err((
                "rc_timeout",
                format!(
                    "{} ns is longer than InfiniBand's longest local ACK timeout, 4.096 us x 2^31 ({MAX_RC_TIMEOUT} ns, about 2.4 h)",
                    self.rc_timeout
                ),
            ));
        }
        for (name, t) in [
            ("vlarb_high", &self.vlarb_high),
            ("vlarb_low", &self.vlarb_low),
        ] {
            if t.len() > 64 {
                return Err((
                    name,
                    format!("{} entries: a VL arbitration table holds 64", t.len()),
                ));
            }
            // a weight-0 entry is skipped, so one beyond the VLs is harmless (OpenSM
            // configurations list VLs 0..14 whatever qos_max_vls is)
            if let Some(&(v, _)) = t.iter().find(|&&(v, w)| v >= self.vls && w > 0) {
                return Err((
                    name,
                    format!(
                        "VL {v} is beyond the {} VLs configured (0..{})",
                        self.vls,
                        self.vls - 1
                    ),
                ));
            }
        }
        for (sl, &vl) in self.sl2vl.iter().enumerate() {
            if vl != 15 && vl >= self.vls {
                return Err((
                    "sl2vl",
                    format!(
                        "SL {sl} is mapped to VL {vl}, beyond the {} VLs configured (0..{})",
                        self.vls,
                        self.vls - 1
                    ),
                ));
            }
        }
        Ok(())
    }

    /// VLs that have a weight in either arbitration table (bit `v` for VL `v`):
    /// packets on any other VL never leave their port.
    pub fn served_vls(&self) -> u16 {
        super::vlarb::VlArb::new(&self.vlarb_high, &self.vlarb_low, self.high_limit).served()
    }
}
