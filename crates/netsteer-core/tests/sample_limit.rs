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

#[test]
fn a_stall_beside_background_traffic_ends_as_stalled_at_once() {
    // the work's channel goes down; an endless background flow on another channel
    // goes on: it ends with the work, so the run is stalled there and then, neither
    // sampled up to the memory limit nor run out to the background flow's end
    let mut e = Engine::new(vec![1e9; 4], vec![0; 4], Box::new(MaxMin));
    e.set_sample_interval(1_000);
    e.add_flows(&[FlowSpec::new(1e6, vec![0]), FlowSpec::new(1e18, vec![2])])
        .unwrap();
    e.set_background(&[1]).unwrap();
    e.run(500_000, u64::MAX);
    e.set_channels_up(&[0], false);
    assert_eq!(e.run_to_end(), RunStatus::Stalled);
    assert!(!e.sample_overflow());
    assert_eq!(e.now(), 500_000, "stalled when the link went down");
    assert_eq!(
        e.samples().0.len(),
        501,
        "a sample every us up to the stall"
    );
    assert!((e.sent(0) - 5e5).abs() < 1.0);
    assert_eq!(e.completion(1), -1, "the background flow never ended");
}

#[test]
fn background_traffic_that_starves_the_work_stalls_it() {
    // a higher class of endless background traffic takes the work's channel: the
    // work cannot move until it ends, and it ends only with the work
    let mut e = Engine::new(vec![1e9; 2], vec![0; 2], Box::new(MaxMin));
    let mut bg = FlowSpec::new(1e18, vec![0]);
    bg.priority = 0;
    let mut work = FlowSpec::new(1e6, vec![0]);
    work.priority = 1;
    e.add_flows(&[work, bg]).unwrap();
    e.set_background(&[1]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Stalled);
    assert_eq!(e.now(), 0);
    assert_eq!(e.completion(0), -1);
}

#[test]
fn a_work_flow_still_moving_beside_background_traffic_is_not_a_stall() {
    // both share the channel: the work finishes (at half the rate), then the
    // background flow ends with it
    let mut e = Engine::new(vec![1e9; 2], vec![0; 2], Box::new(MaxMin));
    e.add_flows(&[FlowSpec::new(1e6, vec![0]), FlowSpec::new(1e18, vec![0])])
        .unwrap();
    e.set_background(&[1]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), 2_000_000);
}

#[test]
fn a_sample_cap_thins_the_samples_and_doubles_the_interval() {
    // 1 GB at 1 GB/s: 1 s. At a 1 ms interval that is 1001 samples; capped at 100,
    // every other one goes and the interval doubles each time the cap is reached:
    // 1 -> 2 -> 4 -> 8 -> 16 ms (1 s / 8 ms = 125 > 100, 1 s / 16 ms = 62.5).
    let mut e = one_long_flow(1_000_000, usize::MAX);
    e.set_sample_cap(100);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert!(!e.sample_overflow());
    assert_eq!(e.sample_interval(), 16_000_000);
    let (times, values) = e.samples();
    assert!((50..=100).contains(&times.len()), "{}", times.len());
    assert_eq!(times[0], 0);
    assert_eq!(
        *times.last().unwrap(),
        1_000_000_000,
        "the last sample holds every byte"
    );
    let gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // the first gap may be shorter, the last ends with the run; the rest are the interval
    assert!(
        gaps[1..gaps.len() - 1].iter().all(|&g| g == 16_000_000),
        "{gaps:?}"
    );
    // each row is the cumulative bytes of channel 0 at its time: 1 byte per ns
    for (i, &t) in times.iter().enumerate() {
        assert!(
            (values[i * 4] - t as f64).abs() < 1.0,
            "{t}: {}",
            values[i * 4]
        );
    }
}

#[test]
fn a_sample_cap_also_thins_at_the_value_limit() {
    // the value limit (100 samples of 4 channels) reached before the cap: thinned too
    let mut e = one_long_flow(1_000_000, 4 * 100);
    e.set_sample_cap(1000);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert!(!e.sample_overflow());
    assert!(e.samples().0.len() <= 100);
    assert_eq!(*e.samples().0.last().unwrap(), 1_000_000_000);
}
