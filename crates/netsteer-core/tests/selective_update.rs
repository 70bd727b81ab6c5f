//! The fluid physics' selective update (only the flows whose rate can change are
//! solved) against solving every touched component whole, on random workloads:
//! arrivals and departures at the same instants (dependencies), weights, CM02's
//! bounds, priority classes, reroutes and capacity changes mid-run. Both forms of
//! the selective update are checked: the tight one (the default: the flows bound
//! where something changed, grown until every flow touched has its bottleneck) and
//! the level-based one it falls back to.
//!
//! Completions are compared within a tolerance, not bit for bit: a selective
//! update solves another subproblem than the whole solve (the kept flows' rates
//! are subtracted from the capacities first), so the same rates come out of
//! another summation order and differ in their last bits, and a finish time that
//! sits on a whole ns can round either way; ties broken by those bits can then
//! reorder dependent flows by a few ns.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::fluid::Fluid;
use netsteer_core::sharing::{Cm02, MaxMin, SharingModel};
use netsteer_core::Engine;

mod common;
use common::Rng;

struct Case {
    cap: Vec<f64>,
    lat: Vec<i64>,
    flows: Vec<FlowSpec>,
    cm02: bool,
    // (at, kind, arg): 0 = reroute flow arg to a random path, 1 = halve channel arg
    changes: Vec<(i64, u8, usize, Vec<u32>)>,
}

fn case(seed: u64) -> Case {
    let mut r = Rng::for_case(seed);
    let nch = 3 + r.below(14) as usize;
    let cap: Vec<f64> = (0..nch)
        .map(|_| [1e9, 2e9, 5e9, 1.25e9][r.below(4) as usize])
        .collect();
    let lat: Vec<i64> = (0..nch).map(|_| r.below(3) as i64 * 500).collect();
    let n = 5 + r.below(120) as usize;
    let classes = if r.below(4) == 0 { 2 } else { 1 };
    let path = |r: &mut Rng| r.path(nch);
    let mut flows = vec![];
    for i in 0..n {
        let mut f = FlowSpec::new((1 + r.below(64)) as f64 * 1e5, path(&mut r));
        f.start = Some(r.below(5) as i64 * 200_000); // shared instants
        f.weight = [1.0, 1.0, 2.0, 3.0][r.below(4) as usize];
        f.priority = r.below(classes) as u8;
        if i > 0 && r.below(3) == 0 {
            f.deps = vec![r.below(i as u64) as u32];
        }
        flows.push(f);
    }
    let mut changes = vec![];
    for _ in 0..r.below(3) {
        let at = 100_000 + r.below(40) as i64 * 50_000;
        if r.below(2) == 0 {
            changes.push((at, 0, r.below(n as u64) as usize, path(&mut r)));
        } else {
            changes.push((at, 1, r.below(nch as u64) as usize, vec![]));
        }
    }
    changes.sort_by_key(|c| c.0);
    Case {
        cap,
        lat,
        flows,
        cm02: r.below(2) == 0,
        changes,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Whole,
    Levels,
    Tight,
}

fn run(c: &Case, mode: Mode) -> Vec<i64> {
    let model: Box<dyn SharingModel> = if c.cm02 {
        Box::new(Cm02::default())
    } else {
        Box::new(MaxMin)
    };
    let phys = Fluid::new(c.cap.len(), model)
        .selective(mode != Mode::Whole)
        .tight(mode == Mode::Tight);
    let mut e = Engine::with_physics(c.cap.clone(), c.lat.clone(), Box::new(phys));
    e.add_flows(&c.flows).unwrap();
    for (at, kind, arg, path) in &c.changes {
        e.run(*at, u64::MAX);
        if *kind == 0 {
            e.reroute(*arg, path).unwrap();
        } else {
            let ch = *arg as u32;
            e.set_capacity(&[ch], c.cap[*arg] / 2.0);
        }
    }
    assert_eq!(e.run_to_end(), RunStatus::Done);
    (0..c.flows.len()).map(|f| e.completion(f)).collect()
}

#[test]
fn selective_update_gives_the_whole_solve_s_completions() {
    let (mut kept_somewhere, mut tight_done, mut tight_failed) = (false, 0, 0);
    // SELECTIVE_SEEDS=6000 for a longer search
    let seeds: u64 = std::env::var("SELECTIVE_SEEDS").map_or(400, |s| s.parse().unwrap());
    let mut worst = 0;
    for seed in 0..seeds {
        let c = case(seed);
        let whole = run(&c, Mode::Whole);
        for mode in [Mode::Levels, Mode::Tight] {
            let sel = run(&c, mode);
            for (f, (a, b)) in whole.iter().zip(&sel).enumerate() {
                // rounding (module text): 6,000 seeds, at most 3 ns in 152 ms
                let tol = 8 + (*a as f64 * 1e-8) as i64;
                worst = worst.max((a - b).abs());
                assert!(
                    (a - b).abs() <= tol,
                    "seed {seed}, flow {f}: whole {a} ns, selective ({}) {b} ns",
                    if mode == Mode::Tight {
                        "tight"
                    } else {
                        "levels"
                    }
                );
            }
        }
        let model: Box<dyn SharingModel> = Box::new(MaxMin);
        let phys = Fluid::new(c.cap.len(), model);
        let mut e = Engine::with_physics(c.cap.clone(), c.lat.clone(), Box::new(phys));
        e.add_flows(&c.flows).unwrap();
        e.run_to_end();
        let fluid = e.physics().as_any().downcast_ref::<Fluid>().unwrap();
        kept_somewhere |= fluid.kept_flows() > 0;
        let (done, failed, _) = fluid.tight_counts();
        tight_done += done;
        tight_failed += failed;
    }
    eprintln!("largest difference {worst} ns; tight updates {tight_done} accepted, {tight_failed} fell back");
    // the test exercises the selective paths, not only their fall-backs
    assert!(kept_somewhere);
    // (most fall-backs here are the components with two priority classes)
    assert!(
        tight_done > 2 * tight_failed,
        "{tight_done} tight updates, {tight_failed} fell back"
    );
}
