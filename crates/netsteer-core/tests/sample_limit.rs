//! Counter samples are bounded: past the limit sampling stops and the engine says so,
//! it never aborts on a buffer it cannot allocate.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::sharing::MaxMin;
use netsteer_core::Engine;

fn one_long_flow(interval: i64, limit: usize) -> Engine {
    let mut e = Engine::new(vec![1e9; 4], vec![0; 4], Box::new(MaxMin));
    e.set_sample_limit(limit);
    e.set_sample_interval(interval);
    // 1 GB at 1 GB/s: one second, a billion samples at 1 ns
    e.add_flows(&[FlowSpec::new(1e9, vec![0, 2])]).unwrap();
    e
}

#[test]
fn sampling_stops_at_the_limit_and_the_run_still_ends() {
    let mut e = one_long_flow(1, 4 * 1000);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert!(e.sample_overflow());
    let (times, values) = e.samples();
    assert_eq!(times.len(), 1000, "samples stop at 1000 x 4 channels");
    assert_eq!(values.len(), 4000);
    assert_eq!(e.completion(0), 1_000_000_000);
}

#[test]
fn under_the_limit_nothing_changes() {
    let mut e = one_long_flow(100_000_000, 4 * 1000);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert!(!e.sample_overflow());
    let (times, values) = e.samples();
    assert_eq!(times.len(), 11, "0, 0.1 s, ... 1 s");
    assert!(
        (values[values.len() - 4] - 1e9).abs() < 1.0,
        "channel 0 carried the whole flow"
    );
}

#[test]
fn a_stalled_run_with_sampling_ends_as_stalled() {
    // the only channel goes down half-way: samples alone must not keep the run going
    let mut e = Engine::new(vec![1e9; 2], vec![0; 2], Box::new(MaxMin));
    e.set_sample_interval(1_000);
    e.add_flows(&[FlowSpec::new(1e6, vec![0])]).unwrap();
    e.run(500_000, u64::MAX);
    e.set_channels_up(&[0], false);
    assert_eq!(e.run_to_end(), RunStatus::Stalled);
    assert!(!e.sample_overflow());
    assert!((e.sent(0) - 5e5).abs() < 1.0);
}
