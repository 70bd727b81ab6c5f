//! A flow's weight and priority class changed in place (`Engine::set_priority_weight`,
//! QoS at flow fidelity): the flow keeps its id, what it has sent, its release, the
//! latency it paid and its dependents; the fluid physics re-solves at that instant
//! and its rates are those of the changed problem solved whole.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::fluid::Fluid;
use netsteer_core::sharing::{Cm02, FlowView, MaxMin, SharingModel};
use netsteer_core::{solve, Engine, FlowState, Problem};

mod common;
use common::Rng;

const GB: f64 = 1e9;

fn engine(cap: &[f64], lat: &[i64]) -> Engine {
    Engine::new(cap.to_vec(), lat.to_vec(), Box::new(MaxMin))
}

/// The ns a flow with `bytes` left takes at `rate` bytes/s, as the engine rounds it.
fn ns_at(bytes: f64, rate: f64) -> i64 {
    (bytes / rate * 1e9).ceil() as i64
}

#[test]
fn a_weight_change_mid_flow_pays_no_latency_again() {
    // two flows on one channel of latency L; at t0 flow 0's weight goes from 1 to 3
    let (cap, lat, bytes) = (GB, 2_000i64, 100e6);
    let mut e = engine(&[cap, cap], &[lat, lat]);
    let mut after = FlowSpec::new(1e6, vec![1]);
    after.deps = vec![0];
    e.add_flows(&[
        FlowSpec::new(bytes, vec![0]),
        FlowSpec::new(bytes, vec![0]),
        after,
    ])
    .unwrap();
    let t0 = lat + 40_000_000;
    assert_eq!(e.run(t0, u64::MAX), RunStatus::Until);
    let sent0 = e.sent(0);
    assert_eq!(sent0, cap / 2.0 * (t0 - lat) as f64 * 1e-9);
    e.set_priority_weight(&[0], &[0], &[3.0]).unwrap();
    assert_eq!(e.n_flows(), 3, "no flow added");
    assert_eq!(e.run_to_end(), RunStatus::Done);
    // from t0 flow 0 has 3/4 of the channel, flow 1 a quarter, until flow 0 is done
    let done0 = t0 + ns_at(bytes - sent0, cap * 0.75);
    assert_eq!(e.completion(0), done0);
    assert_eq!(e.release_time(0), 0);
    assert_eq!(e.sent(0), bytes);
    let sent1 = sent0 + cap * 0.25 * (done0 - t0) as f64 * 1e-9;
    let done1 = done0 + ns_at(bytes - sent1, cap);
    assert!(
        (e.completion(1) - done1).abs() <= 1,
        "{} vs {done1}",
        e.completion(1)
    );
    // its dependent (on another channel) is released when it finishes, then pays
    // its own latency
    assert_eq!(e.release_time(2), done0);
    assert_eq!(e.completion(2), done0 + lat + ns_at(1e6, cap));
}

#[test]
fn a_class_change_mid_flow_yields_to_the_higher_class_without_latency() {
    let (cap, lat, bytes) = (GB, 5_000i64, 100e6);
    let mut e = engine(&[cap], &[lat]);
    e.add_flows(&[FlowSpec::new(bytes, vec![0]), FlowSpec::new(bytes, vec![0])])
        .unwrap();
    let t0 = lat + 40_000_000;
    e.run(t0, u64::MAX);
    let sent = e.sent(0);
    // flow 0 drops to class 1: flow 1 takes the whole channel, then flow 0 the rest
    e.set_priority_weight(&[0], &[1], &[1.0]).unwrap();
    e.run(t0, 0);
    assert_eq!(e.rate(0), 0.0);
    assert_eq!(e.rate(1), cap);
    assert_eq!(e.run_to_end(), RunStatus::Done);
    let done1 = t0 + ns_at(bytes - sent, cap);
    assert_eq!(e.completion(1), done1);
    assert_eq!(e.completion(0), done1 + ns_at(bytes - sent, cap));
    assert_eq!(e.flow(0).priority, 1);
}

#[test]
fn a_flow_changed_before_release_keeps_its_dependencies() {
    // A (channel 0) -> B (channel 1, beside an endless competitor D). B is given
    // weight 3 while it waits for A, or while it pays its latency after A.
    let (cap, l0, l1) = (GB, 1_000i64, 500i64);
    for during_latency in [false, true] {
        let mut e = engine(&[cap, cap], &[l0, l1]);
        let mut b = FlowSpec::new(3e6, vec![1]);
        b.deps = vec![0];
        let d = FlowSpec::new(1e12, vec![1]);
        e.add_flows(&[FlowSpec::new(1e6, vec![0]), b, d]).unwrap();
        e.set_background(&[2]).unwrap();
        let a_done = l0 + ns_at(1e6, cap);
        if during_latency {
            e.run(a_done + l1 / 2, u64::MAX);
            assert_eq!(e.state(1), FlowState::Latency);
        } else {
            e.run(a_done / 2, u64::MAX);
            assert_eq!(e.state(1), FlowState::Waiting);
        }
        e.set_priority_weight(&[1], &[0], &[3.0]).unwrap();
        assert_eq!(e.run_to_end(), RunStatus::Done);
        assert_eq!(e.completion(0), a_done);
        assert_eq!(
            e.release_time(1),
            a_done,
            "released by its dependency, not earlier"
        );
        // its latency from its release, once; then 3/4 of channel 1
        assert_eq!(e.completion(1), a_done + l1 + ns_at(3e6, cap * 0.75));
    }
}

#[test]
fn a_no_op_change_touches_nothing_and_bad_input_changes_nothing() {
    let mut e = engine(&[GB], &[0]);
    e.add_flows(&[FlowSpec::new(1e9, vec![0]), FlowSpec::new(1e9, vec![0])])
        .unwrap();
    e.run(1_000, u64::MAX);
    let solves = e.stats().solves;
    e.set_priority_weight(&[0, 1], &[0, 0], &[1.0, 1.0])
        .unwrap();
    e.run(1_000, 0);
    assert_eq!(
        e.stats().solves,
        solves,
        "the same class and weight: no solve"
    );
    assert!(e
        .set_priority_weight(&[0, 7], &[0, 0], &[2.0, 2.0])
        .is_err());
    assert!(e
        .set_priority_weight(&[0, 1], &[0, 0], &[2.0, 0.0])
        .is_err());
    assert!(e.set_priority_weight(&[0], &[0, 1], &[2.0]).is_err());
    assert_eq!(e.flow(0).weight, 1.0, "a refused call changes no flow");
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.completion(0), 2_000_000_000);
}

#[test]
fn a_flow_moved_to_a_new_class_is_not_kept_by_a_later_update_of_the_old_one() {
    // Every flow starts in class 0: six flows on channel 0, and X (weight 5) alone on
    // channels 1 and 2, held by channel 2 (half of channel 1). X moves to class 1,
    // alone in its component (one class: its bottleneck is recorded). Then Y arrives
    // in class 0 across channels 1 and 0. Class 0 is filled first: Y takes channel 1
    // and X yields. The arrival's update meets more flows on channel 0 than its
    // level-based budget, so the tight update runs; X, bound elsewhere and below the
    // arrival's level, would be kept at its rate if the update took the component
    // for one class (the physics' record of the classes started must take X's new one).
    let cap = [10.0 * GB, 1.0 * GB, 0.5 * GB];
    let mut e = Engine::new(cap.to_vec(), vec![0; 3], Box::new(MaxMin));
    let mut flows: Vec<FlowSpec> = (0..6).map(|_| FlowSpec::new(1e15, vec![0])).collect();
    let mut x = FlowSpec::new(1e15, vec![1, 2]);
    x.weight = 5.0;
    flows.push(x);
    let mut y = FlowSpec::new(1e15, vec![1, 0]);
    y.start = Some(2_000);
    flows.push(y);
    e.add_flows(&flows).unwrap();
    e.run(1_000, u64::MAX);
    e.set_priority_weight(&[6], &[1], &[5.0]).unwrap();
    e.run(1_000, 0);
    assert_eq!(e.rate(6), cap[2], "alone, X keeps its rate in class 1");
    e.run(2_000, u64::MAX);
    let want = solve(&Problem {
        capacity: &cap,
        offsets: &[0, 1, 2, 3, 4, 5, 6, 8, 10],
        channels: &[0, 0, 0, 0, 0, 0, 1, 2, 1, 0],
        weight: &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0, 1.0],
        bound: &[f64::INFINITY; 8],
        priority: &[0, 0, 0, 0, 0, 0, 1, 0],
    });
    assert_eq!(
        (want[6], want[7]),
        (0.0, cap[1]),
        "Y takes channel 1, X yields"
    );
    for (f, w) in want.iter().enumerate() {
        assert!(
            (e.rate(f) - w).abs() <= 1e-9 * w.max(1.0),
            "flow {f}: {} vs {w}",
            e.rate(f)
        );
    }
}

// -- random workloads: in place against solving whole ------------------------------

enum Change {
    Reroute(usize, Vec<u32>),
    Halve(usize),
    // flows, their new classes and weights
    Share(Vec<u32>, Vec<u8>, Vec<f64>),
}

struct Case {
    cap: Vec<f64>,
    lat: Vec<i64>,
    flows: Vec<FlowSpec>,
    cm02: bool,
    changes: Vec<(i64, Change)>,
    seed: u64,
}

fn case(seed: u64) -> Case {
    let mut r = Rng::for_case(seed);
    let nch = 3 + r.below(14) as usize;
    let cap: Vec<f64> = (0..nch)
        .map(|_| [1e9, 2e9, 5e9, 1.25e9][r.below(4) as usize])
        .collect();
    let lat: Vec<i64> = (0..nch).map(|_| r.below(3) as i64 * 500).collect();
    let n = 5 + r.below(100) as usize;
    let classes = if r.below(3) == 0 { 2 } else { 1 };
    // with two classes, half the cases start in one: the other comes by changes only
    let started = if classes == 2 && r.below(2) == 0 {
        1
    } else {
        classes
    };
    let path = |r: &mut Rng| r.path(nch);
    let weights = [0.5, 1.0, 2.0, 3.0, 5.0];
    let mut flows = vec![];
    for i in 0..n {
        let mut f = FlowSpec::new((1 + r.below(64)) as f64 * 1e5, path(&mut r));
        f.start = Some(r.below(5) as i64 * 200_000);
        f.weight = weights[r.below(4) as usize];
        f.priority = r.below(started) as u8;
        if i > 0 && r.below(3) == 0 {
            f.deps = vec![r.below(i as u64) as u32];
        }
        flows.push(f);
    }
    let mut changes = vec![];
    for _ in 0..1 + r.below(6) {
        let at = 50_000 + r.below(60) as i64 * 50_000;
        let ch = match r.below(6) {
            0 => Change::Reroute(r.below(n as u64) as usize, path(&mut r)),
            1 => Change::Halve(r.below(nch as u64) as usize),
            _ => {
                let k = 1 + r.below(3) as usize;
                let fs: Vec<u32> = (0..k).map(|_| r.below(n as u64) as u32).collect();
                // a class change now and then, else a weight change in its class
                let ps: Vec<u8> = fs
                    .iter()
                    .map(|&f| {
                        let p = flows[f as usize].priority;
                        if classes == 2 && r.below(3) == 0 {
                            1 - p
                        } else {
                            p
                        }
                    })
                    .collect();
                let ws: Vec<f64> = (0..k).map(|_| weights[r.below(5) as usize]).collect();
                Change::Share(fs, ps, ws)
            }
        };
        changes.push((at, ch));
    }
    changes.sort_by_key(|c| c.0);
    Case {
        cap,
        lat,
        flows,
        cm02: r.below(2) == 0,
        changes,
        seed,
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Whole,
    Levels,
    Tight,
}

fn model(cm02: bool) -> Box<dyn SharingModel> {
    if cm02 {
        Box::new(Cm02::default())
    } else {
        Box::new(MaxMin)
    }
}

/// The rates of every active flow, solved whole from scratch (one problem).
fn whole_rates(e: &Engine, c: &Case, cap: &[f64]) -> Vec<(usize, f64)> {
    let m = model(c.cm02);
    let active: Vec<usize> = (0..e.n_flows())
        .filter(|&f| e.state(f) == FlowState::Active)
        .collect();
    let (mut offsets, mut chans, mut weight, mut bound, mut prio) =
        (vec![0], vec![], vec![], vec![], vec![]);
    for &f in &active {
        let path = e.flow_path(f);
        let pcap: Vec<f64> = path.iter().map(|&ch| c.cap[ch as usize]).collect();
        let lat: i64 = path.iter().map(|&ch| c.lat[ch as usize]).sum();
        let view = FlowView {
            weight: e.flow(f).weight,
            path_latency_s: lat as f64 * 1e-9,
            path_capacity: &pcap,
        };
        chans.extend_from_slice(path);
        offsets.push(chans.len());
        weight.push(m.weight(&view));
        bound.push(m.bound(&view));
        prio.push(e.flow(f).priority);
    }
    let rates = solve(&Problem {
        capacity: cap,
        offsets: &offsets,
        channels: &chans,
        weight: &weight,
        bound: &bound,
        priority: &prio,
    });
    active.into_iter().zip(rates).collect()
}

#[derive(Default)]
struct Seen {
    active_changes: u64,
    class_changes: u64,
    rate_checks: u64,
    worst_rel: f64,
}

fn run(c: &Case, mode: Mode, seen: &mut Seen) -> Vec<i64> {
    let phys = Fluid::new(c.cap.len(), model(c.cm02))
        .selective(mode != Mode::Whole)
        .tight(mode == Mode::Tight);
    let mut e = Engine::with_physics(c.cap.clone(), c.lat.clone(), Box::new(phys));
    e.add_flows(&c.flows).unwrap();
    let mut cap = c.cap.clone();
    for (at, ch) in &c.changes {
        e.run(*at, u64::MAX);
        match ch {
            Change::Reroute(f, path) => e.reroute(*f, path).unwrap(),
            Change::Halve(k) => {
                cap[*k] /= 2.0;
                e.set_capacity(&[*k as u32], cap[*k]);
            }
            Change::Share(fs, ps, ws) => {
                let old: Vec<(f64, f64)> =
                    (0..e.n_flows()).map(|f| (e.rate(f), e.sent(f))).collect();
                for (&f, &p) in fs.iter().zip(ps) {
                    if e.state(f as usize) == FlowState::Active {
                        seen.active_changes += 1;
                        seen.class_changes += (e.flow(f as usize).priority != p) as u64;
                    }
                }
                e.set_priority_weight(fs, ps, ws).unwrap();
                e.run(*at, 0); // the solve of this instant, nothing after it
                for (f, want) in whole_rates(&e, c, &cap) {
                    let (r0, sent) = old[f];
                    // a flow starved with a few ns of sending left finishes now at its
                    // old rate (the engine's finish slack): not a rate to compare
                    if want == 0.0 && c.flows[f].bytes - sent <= r0 * 16e-9 * (1.0 + 1e-9) {
                        continue;
                    }
                    seen.rate_checks += 1;
                    let got = e.rate(f);
                    // to rounding: the selective update's checks allow 1e-9 of a level,
                    // and even without a change of share its rates stray up to ~7e-9
                    // from a whole solve on these workloads (measured, 300 seeds)
                    let rel = (got - want).abs() / want.max(1.0);
                    seen.worst_rel = seen.worst_rel.max(rel);
                    assert!(
                        rel <= 1e-7,
                        "{mode:?}, flow {f} at {at}: in place {got}, solved whole {want} (seed {})",
                        c.seed
                    );
                }
            }
        }
    }
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.n_flows(), c.flows.len(), "no flow added");
    (0..c.flows.len()).map(|f| e.completion(f)).collect()
}

#[test]
fn in_place_changes_give_the_whole_solve_s_rates_and_completions() {
    // SHARE_SEEDS=3000 for a longer search
    let seeds: u64 = std::env::var("SHARE_SEEDS").map_or(300, |s| s.parse().unwrap());
    let mut seen = Seen::default();
    let mut worst = 0;
    for seed in 0..seeds {
        let c = case(seed);
        let whole = run(&c, Mode::Whole, &mut seen);
        for mode in [Mode::Levels, Mode::Tight] {
            let sel = run(&c, mode, &mut seen);
            for (f, (a, b)) in whole.iter().zip(&sel).enumerate() {
                // rounding, as in tests/selective_update.rs
                let tol = 8 + (*a as f64 * 1e-8) as i64;
                worst = worst.max((a - b).abs());
                assert!(
                    (a - b).abs() <= tol,
                    "seed {seed}, flow {f}: whole {a} ns, {mode:?} {b} ns"
                );
            }
        }
    }
    eprintln!(
        "largest difference {worst} ns; {} changes of active flows ({} of class), {} rates checked, \
         largest relative difference {:e}",
        seen.active_changes, seen.class_changes, seen.rate_checks, seen.worst_rel
    );
    // the changes reach flows in flight, across classes too, and rates are compared
    assert!(seen.active_changes > seeds);
    assert!(seen.class_changes > seeds / 20);
    assert!(seen.rate_checks > 10 * seeds);
}

#[test]
fn the_same_changes_give_the_same_run_to_the_ns() {
    for seed in 0..20 {
        let c = case(seed);
        let mut seen = Seen::default();
        assert_eq!(
            run(&c, Mode::Tight, &mut seen),
            run(&c, Mode::Tight, &mut seen),
            "seed {seed}"
        );
    }
}
