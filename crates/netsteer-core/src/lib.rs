//! netsteer-core: the flow-level simulation engine of netsteer, in pure Rust.
//!
//! * [`solver`]: weighted max-min fair sharing by progressive filling, with
//!   strict-priority classes and per-flow rate bounds.
//! * [`sharing`]: swappable sharing models (plain max-min, SimGrid's CM02 weighting).
//! * [`mpi`]: MPI jobs streamed rank by rank through the engine, in bounded memory.
//! * [`route`]: host-to-host paths resolved in Rust (tables, closed-form D-mod-K).
//! * [`balance`]: min-hop tables balanced by per-switch port counters.
//! * [`rng`]: numpy's seeded permutation, bit for bit, for random rank placement.
//! * [`engine`]: the event-driven, deterministic engine with integer time in
//!   nanoseconds, flow DAGs, reconfiguration and port counters, shared by both
//!   fidelities through the [`physics::Physics`] seam:
//!   * [`fluid`]: flow level, rates from a sharing model (the default, fast);
//!   * [`packet`]: packet level, credits per VL, input buffers, cut-through,
//!     InfiniBand VL arbitration, hosts with a send queue per connection.
//!
//! The Python package reaches this crate through the thin `netsteer-py` crate.

pub mod balance;
pub mod engine;
pub mod fluid;
pub mod mpi;
pub mod packet;
pub mod paths;
pub mod physics;
pub mod queue;
pub mod rng;
pub mod route;
pub mod sharing;
pub mod solver;

/// Simulated time, in integer nanoseconds.
pub type Ns = i64;

/// How far above a whole tick a floating-point time may come out and still count as
/// that tick: this many units of the last place (`f64::EPSILON`, relative) of the
/// time's scale. Times computed as `bytes / rate` carry a few ulps of rounding
/// (`1016 / 1e9 * 1e9` is `1016.0000000000001`), which a bare ceil turned into one
/// more tick per message; anything further above a whole tick is real and rounds up.
pub const TIME_ULPS: f64 = 16.0;

/// The ceil of a time `x` (in ticks, `x >= 0`) to a whole tick, a time within
/// [`TIME_ULPS`] ulps of `scale` (at least `x`) above a whole tick counting as that tick.
///
/// `scale` is the magnitude the time's rounding is relative to: `x` itself for a
/// time computed in one go, a flow's whole time at its rate when its remaining bytes
/// are what is left of a larger sum.
pub fn ceil_time(x: f64, scale: f64) -> f64 {
    let below = x.floor();
    if x - below <= TIME_ULPS * f64::EPSILON * scale.max(x) {
        below
    } else {
        x.ceil()
    }
}

pub use engine::{Engine, EngineError, FlowBatch, FlowSpec, FlowState};
pub use physics::{Net, Physics};
pub use sharing::{Cm02, MaxMin, SharingModel};
pub use solver::{solve, Problem};
