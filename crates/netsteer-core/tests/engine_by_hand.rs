//! The engine's timeline against cases computed by hand.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::sharing::{Cm02, MaxMin};
use netsteer_core::{Engine, FlowState};

const GB: f64 = 1e9;

fn engine(cap: &[f64], lat: &[i64]) -> Engine {
    Engine::new(cap.to_vec(), lat.to_vec(), Box::new(MaxMin))
}

#[test]
fn one_flow_pays_latency_then_bytes() {
    let mut e = engine(&[1.0 * GB, 1.0 * GB], &[1000, 500]);
    e.add_flows(&[FlowSpec::new(1e9, vec![0, 1])]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), 1_500 + 1_000_000_000);
}

#[test]
fn a_second_flow_halves_the_first_then_it_speeds_up() {
    // 1 GB/s link, no latency. A: 1 GB at t=0. B: 0.25 GB at t=0.5s.
    // A alone sends 0.5 GB by 0.5 s; both at 0.5 GB/s: B ends at 1.0 s (A has 0.25 GB left);
    // A alone again: ends at 1.25 s.
    let mut e = engine(&[GB], &[0]);
    let mut b = FlowSpec::new(0.25e9, vec![0]);
    b.start = Some(500_000_000);
    e.add_flows(&[FlowSpec::new(1e9, vec![0]), b]).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(1), 1_000_000_000);
    assert_eq!(e.completion(0), 1_250_000_000);
}

#[test]
fn dependencies_and_delays_order_a_dag() {
    // A (1 GB) -> B (1 GB, compute delay 1 ms): B starts when A ends.
    let mut e = engine(&[GB], &[0]);
    let mut b = FlowSpec::new(1e9, vec![0]);
    b.deps = vec![0];
    b.delay = 1_000_000;
    e.add_flows(&[FlowSpec::new(1e9, vec![0]), b]).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(0), 1_000_000_000);
    assert_eq!(e.release_time(1), 1_000_000_000);
    assert_eq!(e.completion(1), 2_001_000_000);
}

#[test]
fn cycles_are_refused() {
    let mut e = engine(&[GB], &[0]);
    let mut a = FlowSpec::new(1.0, vec![0]);
    a.deps = vec![1];
    let mut b = FlowSpec::new(1.0, vec![0]);
    b.deps = vec![0];
    assert!(e.add_flows(&[a, b]).is_err());
}

#[test]
fn a_link_down_stalls_until_rerouted() {
    // two parallel 1 GB/s channels 0 and 1. Flow on 0; at 0.5 s channel 0 dies;
    // at 0.6 s it is rerouted onto 1: 0.5 GB left -> ends at 1.1 s.
    let mut e = engine(&[GB, GB], &[0, 0]);
    e.add_flows(&[FlowSpec::new(1e9, vec![0])]).unwrap();
    assert_eq!(e.run(500_000_000, u64::MAX), RunStatus::Until);
    e.set_channels_up(&[0], false);
    assert_eq!(e.run(600_000_000, u64::MAX), RunStatus::Until);
    assert_eq!(e.state(0), FlowState::Active);
    e.reroute(0, &[1]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), 1_100_000_000);
}

#[test]
fn a_dark_circuit_stalls_then_resumes() {
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[FlowSpec::new(1e9, vec![0])]).unwrap();
    e.run(200_000_000, u64::MAX);
    e.set_channels_up(&[0], false);
    e.run(300_000_000, u64::MAX);
    e.set_channels_up(&[0], true);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), 1_100_000_000);
}

#[test]
fn stalled_forever_is_reported() {
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[FlowSpec::new(1e9, vec![0])]).unwrap();
    e.set_channels_up(&[0], false);
    assert_eq!(e.run_to_end(), RunStatus::Stalled);
}

#[test]
fn counters_integrate_the_rates() {
    let mut e = engine(&[GB, GB], &[0, 0]);
    e.set_sample_interval(250_000_000);
    let mut b = FlowSpec::new(0.5e9, vec![1]);
    b.start = Some(500_000_000);
    e.add_flows(&[FlowSpec::new(1e9, vec![0]), b]).unwrap();
    e.run_to_end();
    let (times, bytes) = e.samples();
    // the last sample falls on the last completion
    assert_eq!(
        times,
        &[0, 250_000_000, 500_000_000, 750_000_000, 1_000_000_000]
    );
    let row = |i: usize| &bytes[i * 2..i * 2 + 2];
    assert!((row(1)[0] - 0.25e9).abs() < 1.0 && row(1)[1].abs() < 1.0);
    assert!((row(3)[0] - 0.75e9).abs() < 1.0 && (row(3)[1] - 0.25e9).abs() < 1.0);
    let total = e.channel_bytes();
    assert!((total[0] - 1e9).abs() < 1.0 && (total[1] - 0.5e9).abs() < 1.0);
}

#[test]
fn cm02_shares_inversely_to_latency_and_caps_by_window() {
    // channel 0 shared; flow A path latency 1 ms (0 + 1), flow B 3 ms (0 + 3).
    // weights 1/1ms : 1/3ms = 3 : 1 -> A gets 0.75 GB/s, B 0.25 GB/s.
    let mut e = Engine::new(
        vec![GB, 10.0 * GB, 10.0 * GB],
        vec![0, 1_000_000, 3_000_000],
        Box::new(Cm02 {
            tcp_gamma: 0.0,
            weight_s: 0.0,
            ticks_per_ns: 1.0,
        }),
    );
    e.add_flows(&[
        FlowSpec::new(1e12, vec![0, 1]),
        FlowSpec::new(1e12, vec![0, 2]),
    ])
    .unwrap();
    e.run(10_000_000, u64::MAX);
    assert!(
        (e.rate(0) - 0.75 * GB).abs() < 1.0,
        "{} {}",
        e.rate(0),
        e.rate(1)
    );
    assert!((e.rate(1) - 0.25 * GB).abs() < 1.0, "{}", e.rate(1));
    // window bound: gamma / (2 * 10 ms) = 4 MiB / 20 ms, below the 1 GB/s link
    let mut e = Engine::new(vec![GB, GB], vec![0, 10_000_000], Box::new(Cm02::default()));
    e.add_flows(&[FlowSpec::new(1e12, vec![0, 1])]).unwrap();
    e.run(20_000_000, u64::MAX);
    assert!(
        (e.rate(0) - 4_194_304.0 / 20e-3).abs() < 1.0,
        "{}",
        e.rate(0)
    );
}

#[test]
fn incremental_solves_leave_disjoint_parts_alone() {
    // two independent links; flows on link 1 start and end while link 0's flow runs.
    let mut e = engine(&[GB, GB], &[0, 0]);
    let mut specs = vec![FlowSpec::new(10e9, vec![0])];
    for i in 0..10 {
        let mut s = FlowSpec::new(0.1e9, vec![1]);
        s.start = Some(i * 200_000_000);
        specs.push(s);
    }
    e.add_flows(&specs).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(0), 10_000_000_000);
    for i in 0..10 {
        assert_eq!(e.completion(1 + i), i as i64 * 200_000_000 + 100_000_000);
    }
    // every solve after the first touched only link 1's one flow
    let s = e.stats();
    assert_eq!(s.solved_flows, 1 + 10);
}

#[test]
fn identical_runs_are_identical() {
    let run = || {
        let mut e = engine(&[GB, 2.0 * GB, GB], &[100, 200, 300]);
        let specs: Vec<FlowSpec> = (0..50)
            .map(|i| {
                let mut s = FlowSpec::new(
                    1e6 * (1 + i % 7) as f64,
                    vec![(i % 3) as u32, ((i + 1) % 3) as u32],
                );
                s.start = Some((i * 37_000) as i64);
                s
            })
            .collect();
        e.add_flows(&specs).unwrap();
        e.run_to_end();
        (0..50).map(|f| e.completion(f)).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_stopped_bulk_flow_releases_its_dependents() {
    // bulk flow of 1 PB stopped at 2 s; a dependent 1 GB flow then takes 1 s.
    let mut e = engine(&[GB], &[0]);
    let mut next = FlowSpec::new(1e9, vec![0]);
    next.deps = vec![0];
    e.add_flows(&[FlowSpec::new(1e15, vec![0]), next]).unwrap();
    e.run(2_000_000_000, u64::MAX);
    e.stop_flows(&[0]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), 2_000_000_000);
    assert_eq!(e.completion(1), 3_000_000_000);
    assert!((e.channel_bytes()[0] - 3e9).abs() < 1.0);
}

#[test]
fn background_flows_end_with_the_foreground() {
    // bulk background flow shares the link with a 1 GB foreground flow: both at
    // 0.5 GB/s, so the foreground ends at 2 s and the background is stopped then.
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[FlowSpec::new(1e15, vec![0]), FlowSpec::new(1e9, vec![0])])
        .unwrap();
    e.set_background(&[0]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(1), 2_000_000_000);
    assert_eq!(e.completion(0), 2_000_000_000);
    assert!((e.channel_bytes()[0] - 2e9).abs() < 1.0);
}

#[test]
fn batches_are_checked_before_anything_is_added() {
    use netsteer_core::engine::FlowBatch;
    let mut e = engine(&[GB], &[0]);
    fn ok<'a>(deps: &'a [u32], dep_offsets: &'a [usize]) -> FlowBatch<'a> {
        FlowBatch {
            bytes: &[1.0, 1.0],
            path_offsets: &[0, 1, 2],
            paths: &[0, 0],
            start: &[-1, -1],
            delay: &[0, 0],
            weight: &[1.0, 1.0],
            priority: &[0, 0],
            dep_offsets,
            deps,
        }
    }
    // a cycle inside the batch
    let err = e.add_batch(&ok(&[1, 0], &[0, 1, 2])).unwrap_err();
    assert!(
        matches!(err, netsteer_core::EngineError::Cycle { .. }),
        "{err:?}"
    );
    // a dependency on a flow that does not exist
    assert!(e.add_batch(&ok(&[7], &[0, 1, 1])).is_err());
    // offsets that do not cover the dependencies
    assert!(e.add_batch(&ok(&[0], &[0, 0, 0])).is_err());
    assert_eq!(e.n_flows(), 0);
    // a good batch, then one that depends on it across batches
    assert_eq!(e.add_batch(&ok(&[0], &[0, 0, 1])).unwrap(), 0);
    assert_eq!(e.add_batch(&ok(&[1, 2], &[0, 1, 2])).unwrap(), 2);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    let done: Vec<i64> = (0..4).map(|f| e.completion(f)).collect();
    // 1-byte flows at 1 GB/s take 1 ns each, one after the other in a chain
    assert_eq!(done, vec![1, 2, 3, 4]);
}

#[test]
fn a_starved_low_priority_flow_resumes_when_the_high_class_leaves() {
    // The issue-19 case, reduced to its paths: four priority-0 flows with weights
    // 3:1:2 fill channel 1 (a leaf's uplink, 1.25 GB/s) in shares whose sum carries
    // a rounding residue; the priority-1 flow must get exactly nothing while they
    // run, and the whole link after the last of them ends.
    let cap = 1.25 * GB;
    let mut e = engine(&[cap; 6], &[0; 6]);
    let mb = 1024.0 * 1024.0;
    let flow = |bytes: f64, path: Vec<u32>, start: i64, w: f64, prio: u8| {
        let mut f = FlowSpec::new(bytes * mb, path);
        f.start = Some(start);
        f.weight = w;
        f.priority = prio;
        f
    };
    e.add_flows(&[
        flow(8.0, vec![0, 1, 2], 4_000_000, 3.0, 0),
        flow(16.0, vec![3, 1, 2], 2_000_000, 3.0, 1),
        flow(32.0, vec![4, 1, 5], 2_000_000, 1.0, 0),
        flow(8.0, vec![4, 1, 2], 4_000_000, 1.0, 0),
        flow(32.0, vec![0, 1, 5], 0, 2.0, 0),
    ])
    .unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    let last_high = [0, 2, 3, 4].iter().map(|&f| e.completion(f)).max().unwrap();
    let expect = last_high as f64 + 16.0 * mb / cap * 1e9;
    assert!(e.completion(1) > last_high);
    assert!(
        (e.completion(1) as f64 - expect).abs() <= 2.0,
        "{} vs {}",
        e.completion(1),
        expect
    );
}

#[test]
fn a_flow_that_can_never_finish_leaves_the_run_stalled_not_done() {
    // a priority-1 flow under an endless priority-0 flow on the same link
    let mut e = engine(&[GB], &[0]);
    let mut low = FlowSpec::new(1e6, vec![0]);
    low.priority = 1;
    e.add_flows(&[FlowSpec::new(1e300, vec![0]), low]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Stalled);
    assert_eq!(e.unfinished(), 2);
    assert!(e.completion(1) < 0);
}

#[test]
fn sent_bytes_count_what_left_even_for_flows_stopped_early() {
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[FlowSpec::new(2e9, vec![0]), FlowSpec::new(1e9, vec![0])])
        .unwrap();
    e.run(500_000_000, u64::MAX);
    assert!((e.sent(0) - 0.25e9).abs() < 1.0 && (e.sent(1) - 0.25e9).abs() < 1.0);
    e.stop_flows(&[0]).unwrap();
    e.run_to_end();
    assert!((e.sent(0) - 0.25e9).abs() < 1.0, "{}", e.sent(0));
    assert_eq!(e.sent(1), 1e9);
    assert_eq!(e.completion(1), 1_250_000_000);
}

#[test]
fn a_whole_ns_finish_is_not_rounded_up_by_floating_point() {
    // 1 byte per ns (8 Gbit/s), no latency. 1016 B take 1016 ns exactly; in floating
    // point 1016 / 1e9 * 1e9 is 1016.0000000000001, which a bare ceil made 1017.
    let rate = 1.0 * GB; // bytes/s
    let bytes = 1016.0;
    let exact = (bytes / rate * 1e9) as i64; // the hand figure, 1016
    assert_eq!(exact, 1016);
    assert!(
        bytes / rate * 1e9 > 1016.0,
        "the case must carry the float residue"
    );
    // a chain of three: each one the last's whole time later
    let mut e = engine(&[rate, rate, rate], &[0, 0, 0]);
    let a = FlowSpec::new(bytes, vec![0]);
    let mut b = FlowSpec::new(bytes, vec![1]);
    b.deps = vec![0];
    let mut c = FlowSpec::new(bytes, vec![2]);
    c.deps = vec![1];
    e.add_flows(&[a, b, c]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), exact);
    assert_eq!(e.completion(1), 2 * exact);
    assert_eq!(e.completion(2), 3 * exact);
}

#[test]
fn a_finish_truly_past_a_whole_ns_still_rounds_up() {
    // A time above a whole ns by more than floating-point rounding still goes to the
    // next ns, as before: 1017 B at 1.0001 B/ns is 1016.898... ns -> 1017.
    let mut e = engine(&[1.0001 * GB], &[0]);
    e.add_flows(&[FlowSpec::new(1017.0, vec![0])]).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(0), (1017.0f64 / 1.0001).ceil() as i64); // 1017
                                                                     // 1000.001 B at 1 B/ns: 1000.001 ns -> 1001 (a ps past a whole ns is real)
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[FlowSpec::new(1000.001, vec![0])]).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(0), 1001);
}

#[test]
fn a_shared_then_alone_flow_finishes_on_its_whole_ns() {
    // 1 B/ns link, no latency. A: 2032 B, B: 1016 B, both at t=0, 0.5 B/ns each.
    // B ends at 2032 ns; A has 2032 - 1016 = 1016 B left, alone at 1 B/ns: 3048 ns.
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[
        FlowSpec::new(2032.0, vec![0]),
        FlowSpec::new(1016.0, vec![0]),
    ])
    .unwrap();
    e.run_to_end();
    assert_eq!(e.completion(1), 2 * 1016);
    assert_eq!(e.completion(0), 2 * 1016 + (2032 - 1016));
}
