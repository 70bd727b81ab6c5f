//! Max-min sharing against cases computed by hand.

use netsteer_core::solver::{solve, Problem};

const INF: f64 = f64::INFINITY;

fn rates(cap: &[f64], paths: &[&[u32]], weight: &[f64], bound: &[f64], prio: &[u8]) -> Vec<f64> {
    let mut offsets = vec![0usize];
    let mut channels = vec![];
    for p in paths {
        channels.extend_from_slice(p);
        offsets.push(channels.len());
    }
    solve(&Problem {
        capacity: cap,
        offsets: &offsets,
        channels: &channels,
        weight,
        bound,
        priority: prio,
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// A rate at a finite bound (`close` would call any rate close to an infinite one:
/// inf <= inf).
fn at_bound(r: f64, bound: f64) -> bool {
    bound.is_finite() && close(r, bound)
}

/// A xorshift generator: random instances that are the same on every run.
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// Max-min fairness, by its definition: no channel over capacity, and every flow at
/// its bound or with a bottleneck (a saturated channel where no flow has a higher
/// level, rate over weight).
fn assert_max_min(cap: &[f64], owned: &[Vec<u32>], w: &[f64], bound: &[f64], r: &[f64]) {
    let mut load = vec![0.0; cap.len()];
    for (f, p) in owned.iter().enumerate() {
        for &c in p {
            load[c as usize] += r[f];
        }
    }
    for c in 0..cap.len() {
        assert!(
            load[c] <= cap[c] * (1.0 + 1e-9),
            "channel {c} over capacity"
        );
    }
    for (f, p) in owned.iter().enumerate() {
        let ok = at_bound(r[f], bound[f])
            || p.iter().any(|&c| {
                let c = c as usize;
                let saturated = load[c] >= cap[c] * (1.0 - 1e-9);
                let maximal = owned
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| q.contains(&(c as u32)))
                    .all(|(g, _)| r[g] / w[g] <= r[f] / w[f] * (1.0 + 1e-9));
                saturated && maximal
            });
        assert!(ok, "flow {f} has no bottleneck: rates {r:?}");
    }
}

#[test]
fn n_flows_on_one_link_split_it_evenly() {
    for n in [1usize, 2, 3, 7, 100] {
        let paths: Vec<&[u32]> = vec![&[0]; n];
        let r = rates(&[12.0], &paths, &vec![1.0; n], &vec![INF; n], &vec![0; n]);
        for x in r {
            assert!(close(x, 12.0 / n as f64), "n={n}: {x}");
        }
    }
}

#[test]
fn parking_lot_gives_the_long_flow_its_fair_share_on_each_hop() {
    // chain of 3 links of capacity 1; flow 0 crosses all, flows 1..3 one each.
    let r = rates(
        &[1.0, 1.0, 1.0],
        &[&[0, 1, 2], &[0], &[1], &[2]],
        &[1.0; 4],
        &[INF; 4],
        &[0; 4],
    );
    for x in &r {
        assert!(close(*x, 0.5), "{r:?}");
    }
    // second link has capacity 3: the long flow is still held to 1/2 by the others,
    // and the short flow on link 1 takes the rest.
    let r = rates(
        &[1.0, 3.0, 1.0],
        &[&[0, 1, 2], &[0], &[1], &[2]],
        &[1.0; 4],
        &[INF; 4],
        &[0; 4],
    );
    assert!(
        close(r[0], 0.5) && close(r[1], 0.5) && close(r[2], 2.5) && close(r[3], 0.5),
        "{r:?}"
    );
}

#[test]
fn bottleneck_leftover_goes_to_unconstrained_flows() {
    // flows A (links 0,1), B (link 1), C (link 0). cap0 = 2, cap1 = 10.
    // link 0 saturates at 1 each for A and C; B takes 10 - 1 = 9.
    let r = rates(
        &[2.0, 10.0],
        &[&[0, 1], &[1], &[0]],
        &[1.0; 3],
        &[INF; 3],
        &[0; 3],
    );
    assert!(
        close(r[0], 1.0) && close(r[1], 9.0) && close(r[2], 1.0),
        "{r:?}"
    );
}

#[test]
fn weighted_shares_are_proportional() {
    let r = rates(
        &[10.0],
        &[&[0], &[0], &[0]],
        &[1.0, 2.0, 2.0],
        &[INF; 3],
        &[0; 3],
    );
    assert!(
        close(r[0], 2.0) && close(r[1], 4.0) && close(r[2], 4.0),
        "{r:?}"
    );
}

#[test]
fn a_bounded_flow_leaves_the_rest_to_others() {
    let r = rates(&[10.0], &[&[0], &[0]], &[1.0, 1.0], &[1.5, INF], &[0, 0]);
    assert!(close(r[0], 1.5) && close(r[1], 8.5), "{r:?}");
}

#[test]
fn strict_priority_serves_class_zero_first() {
    // high-priority flow alone on link 0 with a low-priority one: it takes all.
    let r = rates(&[10.0], &[&[0], &[0]], &[1.0, 1.0], &[INF; 2], &[0, 1]);
    assert!(close(r[0], 10.0) && close(r[1], 0.0), "{r:?}");
    // bounded high class leaves the rest to the low class, shared evenly.
    let r = rates(
        &[10.0],
        &[&[0], &[0], &[0]],
        &[1.0; 3],
        &[4.0, INF, INF],
        &[0, 1, 1],
    );
    assert!(
        close(r[0], 4.0) && close(r[1], 3.0) && close(r[2], 3.0),
        "{r:?}"
    );
    // high class bottlenecked elsewhere: low class gets the remainder of link 1.
    let r = rates(
        &[2.0, 10.0],
        &[&[0, 1], &[1]],
        &[1.0; 2],
        &[INF; 2],
        &[0, 1],
    );
    assert!(close(r[0], 2.0) && close(r[1], 8.0), "{r:?}");
}

#[test]
fn a_dead_link_stalls_its_flows_only() {
    let r = rates(&[0.0, 5.0], &[&[0, 1], &[1]], &[1.0; 2], &[INF; 2], &[0; 2]);
    assert!(close(r[0], 0.0) && close(r[1], 5.0), "{r:?}");
}

#[test]
fn result_is_max_min_fair_on_random_instances() {
    // property: feasible, and every flow has a saturated link on which it has a
    // maximal rate (or hits its bound) -- the definition of max-min fairness.
    let mut next = xorshift(12345);
    for _ in 0..200 {
        let nl = 1 + (next() % 8) as usize;
        let nf = 1 + (next() % 12) as usize;
        let cap: Vec<f64> = (0..nl).map(|_| 1.0 + (next() % 100) as f64).collect();
        let mut owned: Vec<Vec<u32>> = vec![];
        for _ in 0..nf {
            let mut p: Vec<u32> = (0..nl as u32).filter(|_| next() % 3 == 0).collect();
            if p.is_empty() {
                p.push((next() % nl as u64) as u32);
            }
            owned.push(p);
        }
        let paths: Vec<&[u32]> = owned.iter().map(|p| p.as_slice()).collect();
        let w: Vec<f64> = (0..nf).map(|_| 1.0 + (next() % 3) as f64).collect();
        let bound = vec![INF; nf];
        let r = rates(&cap, &paths, &w, &bound, &vec![0; nf]);
        assert_max_min(&cap, &owned, &w, &bound, &r);
    }
}

#[test]
fn channels_of_one_flow_bind_like_shared_ones() {
    // Each flow has two channels of its own (a host's links) and crosses some
    // shared ones; the solver keeps only the tightest own channel of a flow in its
    // heap. Property: every flow is at its bound or has a bottleneck (saturated,
    // its level maximal there), whether that is its own channel or a shared one;
    // a flow held by its own channel gets that channel's capacity as the fill
    // computes it (weight times level).
    let mut next = xorshift(987654321);
    for _ in 0..500 {
        let shared = 1 + (next() % 5) as usize;
        let nf = 1 + (next() % 10) as usize;
        // few distinct capacities: ties between channels are common
        let mut cap: Vec<f64> = (0..shared)
            .map(|_| [10.0, 20.0, 30.0][(next() % 3) as usize])
            .collect();
        let mut owned: Vec<Vec<u32>> = vec![];
        for _ in 0..nf {
            let mut p: Vec<u32> = (0..shared as u32).filter(|_| next() % 2 == 0).collect();
            for _ in 0..2 {
                p.push(cap.len() as u32);
                cap.push([2.0, 5.0, 10.0, 40.0][(next() % 4) as usize]);
            }
            owned.push(p);
        }
        let paths: Vec<&[u32]> = owned.iter().map(|p| p.as_slice()).collect();
        let w: Vec<f64> = (0..nf)
            .map(|_| [1.0, 1.0, 2.0, 3.0][(next() % 4) as usize])
            .collect();
        let bound: Vec<f64> = (0..nf)
            .map(|_| if next() % 4 == 0 { 3.0 } else { INF })
            .collect();
        let r = rates(&cap, &paths, &w, &bound, &vec![0; nf]);
        assert_max_min(&cap, &owned, &w, &bound, &r);
        for (f, p) in owned.iter().enumerate() {
            let own_min = p[p.len() - 2..]
                .iter()
                .map(|&c| cap[c as usize])
                .fold(INF, f64::min);
            assert!(r[f] <= own_min * (1.0 + 1e-12) && r[f] <= bound[f] * (1.0 + 1e-12));
            // bottlenecked by its own channel: exactly that channel's capacity
            if !at_bound(r[f], bound[f]) && close(r[f], own_min) {
                assert_eq!(r[f], w[f] * (own_min / w[f]));
            }
        }
    }
}
