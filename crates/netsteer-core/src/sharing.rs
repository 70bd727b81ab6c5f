//! Sharing models: how a flow's weight and rate bound follow from its path.
//!
//! As in SimGrid's `--cfg=network/model:`, the model is a parameter of the engine.
//! [`MaxMin`] shares by the flow's own weight only. [`Cm02`] follows SimGrid's CM02:
//! a flow's share is inversely proportional to its path latency (TCP's RTT
//! unfairness) and its rate is capped by the TCP window, `gamma / (2 * latency)`.

/// What a model needs to know of a flow when it enters the network.
pub struct FlowView<'a> {
    /// The weight the workload gave the flow (1 by default).
    pub weight: f64,
    /// Sum of the latencies of the channels on its path, in seconds.
    pub path_latency_s: f64,
    /// Capacity of each channel on its path, in bytes per second.
    pub path_capacity: &'a [f64],
}

pub trait SharingModel: Send + Sync {
    fn name(&self) -> &'static str;
    /// Weight in the max-min problem: a larger weight gets a larger share.
    fn weight(&self, f: &FlowView) -> f64;
    /// Rate bound in bytes per second (`f64::INFINITY` for none).
    fn bound(&self, f: &FlowView) -> f64;
}

/// Plain weighted max-min fairness.
#[derive(Clone, Debug, Default)]
pub struct MaxMin;

impl SharingModel for MaxMin {
    fn name(&self) -> &'static str {
        "maxmin"
    }
    fn weight(&self, f: &FlowView) -> f64 {
        f.weight
    }
    fn bound(&self, _f: &FlowView) -> f64 {
        f64::INFINITY
    }
}

/// SimGrid's CM02 weighting: penalty = path latency (+ `weight_s` / bandwidth per
/// hop), share proportional to 1 / penalty, rate at most `tcp_gamma / (2 * latency)`.
#[derive(Clone, Debug)]
pub struct Cm02 {
    /// TCP window in bytes; SimGrid's `network/TCP-gamma` (default 4 MiB). 0 disables.
    pub tcp_gamma: f64,
    /// SimGrid's `network/weight-S` in bytes; 0 under CM02.
    pub weight_s: f64,
    /// Engine ticks per ns (the engine's clock; 1: the ns clock). An engine on a
    /// finer clock runs the network that many times slower and longer, so every
    /// path latency (and `weight_s` / bandwidth) it hands the model is that many
    /// times larger; a latency-free flow's penalty of 1 s is scaled the same way, so
    /// that the weights, and the result, do not depend on the clock.
    pub ticks_per_ns: f64,
}

impl Default for Cm02 {
    fn default() -> Self {
        Cm02 {
            tcp_gamma: 4_194_304.0,
            weight_s: 0.0,
            ticks_per_ns: 1.0,
        }
    }
}

impl SharingModel for Cm02 {
    fn name(&self) -> &'static str {
        "cm02"
    }
    fn weight(&self, f: &FlowView) -> f64 {
        let mut penalty = f.path_latency_s;
        if self.weight_s > 0.0 {
            // SimGrid divides weight-S by each link's bandwidth in bytes/s, as here
            penalty += f
                .path_capacity
                .iter()
                .map(|c| self.weight_s / c)
                .sum::<f64>();
        }
        if penalty > 0.0 {
            f.weight / penalty
        } else {
            // SimGrid gives a latency-free flow a penalty of 1 (s), here in the
            // engine's seconds, as the latencies are
            f.weight / self.ticks_per_ns
        }
    }
    fn bound(&self, f: &FlowView) -> f64 {
        if self.tcp_gamma > 0.0 && f.path_latency_s > 0.0 {
            self.tcp_gamma / (2.0 * f.path_latency_s)
        } else {
            f64::INFINITY
        }
    }
}

/// Build a model by name, as scenarios spell it.
pub fn by_name(name: &str, tcp_gamma: Option<f64>) -> Option<Box<dyn SharingModel>> {
    by_name_on_clock(name, tcp_gamma, 1)
}

/// [`by_name`] for an engine whose clock runs `ticks_per_ns` ticks per ns.
pub fn by_name_on_clock(
    name: &str,
    tcp_gamma: Option<f64>,
    ticks_per_ns: i64,
) -> Option<Box<dyn SharingModel>> {
    match name {
        "maxmin" => Some(Box::new(MaxMin)),
        "cm02" => {
            let mut m = Cm02 {
                ticks_per_ns: ticks_per_ns as f64,
                ..Cm02::default()
            };
            if let Some(g) = tcp_gamma {
                m.tcp_gamma = g;
            }
            Some(Box::new(m))
        }
        _ => None,
    }
}
