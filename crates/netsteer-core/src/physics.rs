//! The seam between the engine and the physics of the network.
//!
//! [`crate::engine::Engine`] owns what every fidelity shares: flow and dependency
//! intake, release and delays, the streamed MPI jobs, background traffic, the
//! network's state (channels up or down, capacities), reconfiguration (re-routing
//! flows in flight), counter sampling and the event loop's clock. A [`Physics`]
//! owns only how bytes cross the network once a flow is active:
//!
//! * [`crate::fluid::Fluid`]: flows as fluids, rates from a sharing model
//!   (weighted max-min, CM02) re-solved when the set of flows changes;
//! * [`crate::packet::Packets`]: messages cut into packets, credits per virtual
//!   lane, input buffers, cut-through switching and VL arbitration.
//!
//! The engine calls the physics at coarse points only (a flow starts or leaves,
//! the network changes, the clock reaches the physics' next event, an instant
//! ends), so a trait object costs nothing measurable; each physics keeps its own
//! per-flow state and its own events, indexed by the engine's flow ids.

use std::any::Any;

use crate::Ns;

/// A flow as the engine keeps it, whatever the physics.
#[derive(Debug, Clone)]
pub struct FlowCore {
    pub bytes: f64,
    /// The flow's current path: `paths[path_start..path_start + path_len]`.
    pub path_start: usize,
    pub path_len: usize,
    /// The weight the workload gave the flow (or the last
    /// [`crate::engine::Engine::set_priority_weight`]).
    pub weight: f64,
    /// Strict-priority class (flow fidelity); changed in place as the weight is.
    pub priority: u8,
    /// InfiniBand service level (packet fidelity: mapped to a VL by SL2VL).
    pub sl: u8,
    /// Bumped when a streamed flow's slot is reused, so stale events are told apart.
    pub version: u32,
}

/// What a physics sees of the engine: the flows, their paths, the channels.
pub struct Net<'a> {
    pub flows: &'a [FlowCore],
    pub paths: &'a [u32],
    /// Capacity now, bytes per second (0 while a channel is down).
    pub capacity: &'a [f64],
    /// Capacity when up.
    pub base_capacity: &'a [f64],
    /// Latency per channel, ns.
    pub latency: &'a [Ns],
}

impl Net<'_> {
    pub fn path(&self, f: usize) -> &[u32] {
        let fl = &self.flows[f];
        &self.paths[fl.path_start..fl.path_start + fl.path_len]
    }
    /// Flow `f`'s path latency: the sum of its channels', saturating at `Ns::MAX`. A
    /// link may take up to `Ns::MAX` ns (the topology's bound), so two hops could wrap
    /// to a negative latency; saturated, the flow ends past the clock's range and the
    /// run is refused as one that does not end within it.
    pub fn path_latency(&self, f: usize) -> Ns {
        self.path(f)
            .iter()
            .fold(0, |s: Ns, &c| s.saturating_add(self.latency[c as usize]))
    }
}

/// How bytes cross the network. See the module text for the division of labour.
pub trait Physics: Send + Sync {
    /// The fidelity's name as reports spell it (`maxmin`, `cm02`, `packet`).
    fn name(&self) -> &'static str;
    /// True when a flow pays its path latency before its first byte moves (fluid);
    /// false when latency is paid on the wire, packet by packet.
    fn latency_up_front(&self) -> bool;
    /// True when a flow may be finished a little before its last byte's time (the
    /// engine's merge window, [`crate::engine::Engine::set_merge_window`]): the fluid
    /// physics, where a finish is a computed time. Not packets, which are on the wire.
    fn can_merge(&self) -> bool {
        false
    }
    /// Flow `f` becomes active now: its bytes start to move along its path.
    fn start(&mut self, net: &Net, f: usize, now: Ns);
    /// Flow `f` leaves the network now (finished, stopped, or about to be given a
    /// new path: [`Physics::rejoin`] follows then). Its sent bytes stay counted.
    fn leave(&mut self, net: &Net, f: usize, now: Ns);
    /// Flow `f` goes on from now along its new path, keeping what it has sent.
    fn rejoin(&mut self, net: &Net, f: usize, now: Ns);
    /// Active flow `f`'s service level changed (QoS): its next bytes take the new one.
    fn sl_changed(&mut self, _net: &Net, _f: usize, _now: Ns) {}
    /// Active flow `f`'s weight or strict-priority class changed (QoS at flow
    /// fidelity): `net` holds the new values, `old_priority` its class before. It
    /// keeps its path and what it has sent; its next bytes move by the new share.
    /// Physics that share by neither (packets: VL arbitration) ignore it.
    fn share_changed(&mut self, _net: &Net, _f: usize, _old_priority: u8, _now: Ns) {}
    /// Channels went down or up, or changed capacity.
    fn channels_changed(&mut self, net: &Net, channels: &[u32], now: Ns);
    /// The time of the physics' next own event, if any.
    fn next_time(&self) -> Option<Ns>;
    /// Handle the physics' events due at `now`; push the flows whose last byte
    /// arrived to `done`. Returns the number of live events handled.
    fn advance(&mut self, net: &Net, now: Ns, done: &mut Vec<u32>) -> u64;
    /// Run ahead from `now` while nothing else can happen: handle events up to
    /// `horizon` (inclusive), but stop at the end of the first instant in which a
    /// flow finished or after about `budget` events. Returns the live events handled
    /// and the instant reached. A physics whose every event needs the engine (the
    /// fluid one: each finish changes rates) handles `now` only, the default.
    fn run_ahead(
        &mut self,
        net: &Net,
        now: Ns,
        _horizon: Ns,
        _budget: u64,
        done: &mut Vec<u32>,
    ) -> (u64, Ns) {
        (self.advance(net, now, done), now)
    }
    /// Whether some active flow that `pick` accepts will finish as things stand,
    /// nothing else changing (fluid: it has a rate). A physics that cannot tell
    /// says true: the engine then never calls a run stalled on its word.
    fn will_finish(&self, _pick: &dyn Fn(u32) -> bool) -> bool {
        true
    }
    /// Every event of the instant `now` has been handled (fluid: re-solve rates).
    fn settle(&mut self, net: &Net, now: Ns);
    /// Drop the physics' own events after `now` (the work is over).
    fn truncate_after(&mut self, now: Ns);
    /// Bytes flow `f` has moved so far (it is active).
    fn sent(&self, f: usize, now: Ns) -> f64;
    /// Flow `f`'s rate now, bytes per second (0 where the physics has no rates).
    fn rate(&self, f: usize) -> f64;
    /// Append each channel's cumulative bytes at `now` to `out`.
    fn channel_bytes_into(&self, now: Ns, out: &mut Vec<f64>);
    /// Active flows on any of `channels`, sorted, without duplicates.
    fn flows_on(&self, channels: &[u32]) -> Vec<u32>;
    /// Add the physics' own work counters.
    fn add_stats(&self, stats: &mut crate::engine::Stats);
    /// A sample of the physics' own state was asked for at `now` (the engine's
    /// counter interval); return false when its buffer is full.
    fn sample(&mut self, _now: Ns, _limit: usize) -> bool {
        true
    }
    /// The engine thinned its counter samples to those at `keep` (ascending indices
    /// of the samples taken so far): keep the same rows of the physics' own.
    fn thin_samples(&mut self, _keep: &[usize]) {}
    /// Finished flow `f`'s first packet time and its time alone on an idle fabric,
    /// ps (-1 where there is none), for per-message figures of flows whose slot is
    /// reused (streamed MPI). Physics without packets have neither: None.
    fn message_times(&self, _f: usize) -> Option<(i64, i64)> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_latency_saturates_instead_of_wrapping() {
        // two hops of the largest latency a topology accepts: their sum wrapped to -2
        let flows = [FlowCore {
            bytes: 1.0,
            path_start: 0,
            path_len: 2,
            weight: 1.0,
            priority: 0,
            sl: 0,
            version: 0,
        }];
        let (paths, cap, lat) = ([0u32, 1], [1.0, 1.0], [Ns::MAX, Ns::MAX]);
        let net = Net {
            flows: &flows,
            paths: &paths,
            capacity: &cap,
            base_capacity: &cap,
            latency: &lat,
        };
        assert_eq!(net.path_latency(0), Ns::MAX);
        let lat = [3, 4];
        let net = Net {
            latency: &lat,
            ..net
        };
        assert_eq!(net.path_latency(0), 7);
    }
}
