//! The merge window (SimGrid's timing precision) against cases computed by hand:
//! what falls due less than the window after an event happens with it.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::sharing::MaxMin;
use netsteer_core::Engine;

/// 1 byte per ns on every channel, no latency unless given.
fn engine(n: usize, lat: &[i64]) -> Engine {
    let mut l = lat.to_vec();
    l.resize(n, 0);
    Engine::new(vec![1e9; n], l, Box::new(MaxMin))
}

fn flow(bytes: f64, ch: u32) -> FlowSpec {
    FlowSpec::new(bytes, vec![ch])
}

#[test]
fn a_finish_inside_the_window_happens_with_the_event_before_it() {
    // A ends at 100, B at 105, C at 111 (separate channels). Window 10: B is taken
    // at 100; C, 11 after, keeps its time. Without a window each keeps its own.
    for (window, b_end) in [(0, 105), (10, 100)] {
        let mut e = engine(3, &[]);
        e.set_merge_window(window).unwrap();
        e.add_flows(&[flow(100.0, 0), flow(105.0, 1), flow(111.0, 2)])
            .unwrap();
        assert_eq!(e.run_to_end(), RunStatus::Done);
        assert_eq!(
            (e.completion(0), e.completion(1), e.completion(2)),
            (100, b_end, 111)
        );
    }
}

#[test]
fn the_window_is_not_chained() {
    // A 100, B 108, C 116: B joins A's event; C is 16 after A, so it keeps its time
    // (SimGrid compares every action with the one event's date, not with each other)
    let mut e = engine(3, &[]);
    e.set_merge_window(10).unwrap();
    e.add_flows(&[flow(100.0, 0), flow(108.0, 1), flow(116.0, 2)])
        .unwrap();
    e.run_to_end();
    assert_eq!(
        (e.completion(0), e.completion(1), e.completion(2)),
        (100, 100, 116)
    );
}

#[test]
fn a_latency_ending_inside_the_window_starts_sending_at_the_event() {
    // A: 100 B on channel 0, done at 100. B: 50 B over channel 1 of latency 104, its
    // latency ends at 104: with a window of 10 it starts sending at 100, ends at 150
    for (window, b_end) in [(0, 154), (10, 150)] {
        let mut e = engine(2, &[0, 104]);
        e.set_merge_window(window).unwrap();
        e.add_flows(&[flow(100.0, 0), flow(50.0, 1)]).unwrap();
        e.run_to_end();
        assert_eq!((e.completion(0), e.completion(1)), (100, b_end));
    }
}

#[test]
fn a_merged_finish_releases_its_successors_at_the_event() {
    // B (ends at 105, merged to 100) -> C (20 B): C starts at 100 and ends at 120
    let mut e = engine(2, &[]);
    e.set_merge_window(10).unwrap();
    let mut c = flow(20.0, 1);
    c.deps = vec![1];
    e.add_flows(&[flow(100.0, 0), flow(105.0, 1), c]).unwrap();
    e.run_to_end();
    assert_eq!((e.release_time(2), e.completion(2)), (100, 120));
}

#[test]
fn counter_samples_neither_trigger_nor_join_a_merge() {
    // samples every 50: one at 100 would pull B (105) in if samples counted as events
    let mut e = engine(2, &[]);
    e.set_merge_window(10).unwrap();
    e.set_sample_interval(50);
    e.add_flows(&[flow(100.0, 0), flow(105.0, 1)]).unwrap();
    e.run_to_end();
    // A's finish at 100 is an event: B joins it
    assert_eq!(e.completion(1), 100);
    let mut e = engine(1, &[]);
    e.set_merge_window(10).unwrap();
    e.set_sample_interval(100);
    e.add_flows(&[flow(105.0, 0)]).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(0), 105); // the sample at 100 took nothing
}

#[test]
fn a_negative_window_is_refused() {
    let mut e = engine(1, &[]);
    let err = e.set_merge_window(-1).unwrap_err();
    assert!(err.to_string().contains("negative"), "{err}");
}

#[test]
fn the_packet_physics_has_no_merge_window() {
    use netsteer_core::packet::{PacketConfig, Packets};
    let p = Packets::new(1, PacketConfig::default()).unwrap();
    let mut e = Engine::with_physics(vec![1e9], vec![0], Box::new(p));
    assert!(e.set_merge_window(0).is_ok());
    let err = e.set_merge_window(10).unwrap_err();
    assert!(err.to_string().contains("packet"), "{err}");
}
