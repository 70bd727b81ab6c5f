//! A message's time alone on an idle fabric (`ideal`, what its queueing is measured
//! against) is exactly what the packet fabric takes for it, on random routes, rates,
//! latencies, buffers, sizes and switching modes; the periodic shortcut that keeps
//! it cheap for long messages gives what a packet-by-packet pass gives; and a bulk
//! flow's nominal size neither overflows nor costs its packets.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::packet::ideal::{
    lone_message, lone_message_direct, lone_message_direct_last, lone_message_last, Hop, Lone,
};
use netsteer_core::packet::{credit_bytes, PacketConfig, Packets};
use netsteer_core::{Engine, Ns};

#[allow(dead_code)]
mod common;
use common::Rng;

/// Rates (bytes/s) links come in, odd ones included (ser rounded up to the ps).
const RATES: [f64; 9] = [
    10e9 / 8.0,
    25e9 / 8.0,
    4e9,
    40e9 / 8.0,
    56e9 / 8.0,
    100e9 / 8.0,
    200e9 / 8.0,
    12.5e9 / 8.0,
    3e9 + 7.0,
];

struct Case {
    cfg: PacketConfig,
    cap: Vec<f64>,
    lat: Vec<Ns>,
    bytes: u64,
}

fn case(seed: u64, max_bytes: u64) -> Case {
    let mut r = Rng::for_case(seed);
    let h = 1 + r.below(6) as usize;
    // a few rates per case, so that equal rates (cut-through) and other ones mix
    let kinds: Vec<f64> = (0..1 + r.below(3))
        .map(|_| RATES[r.below(RATES.len() as u64) as usize])
        .collect();
    let cap: Vec<f64> = (0..h)
        .map(|_| kinds[r.below(kinds.len() as u64) as usize])
        .collect();
    let lat: Vec<Ns> = (0..h)
        .map(|_| match r.below(4) {
            0 => 0,
            1 => 1 + r.below(300) as Ns,
            2 => 100,
            _ => r.below(20_000) as Ns, // long links: credits may hold the flow
        })
        .collect();
    let mtu = 256 << r.below(5);
    let header = [26, 0, 30, 100][r.below(4) as usize];
    let packet = credit_bytes(mtu + header);
    // buffers from one packet to many, not always a whole number of packets
    let buffer = match r.below(4) {
        0 => packet,
        1 => packet * (1 + r.below(12) as u32) + 64 * r.below(packet as u64 / 64) as u32,
        2 => 16 * 1024.max(packet),
        _ => packet + r.below(256 * 1024) as u32,
    };
    let cfg = PacketConfig {
        mtu,
        header,
        buffer,
        switch_latency: [0, 100, 37, 450][r.below(4) as usize],
        cut_through: r.below(3) > 0,
        ..Default::default()
    };
    cfg.check().expect("a valid configuration");
    let mtu = mtu as u64;
    let bytes = match r.below(5) {
        0 => 1 + r.below(mtu),
        1 => mtu * (1 + r.below(max_bytes / mtu)),
        2 => mtu * (1 + r.below(max_bytes / mtu)) + 1,
        _ => 1 + r.below(max_bytes),
    };
    Case {
        cfg,
        cap,
        lat,
        bytes,
    }
}

fn hops(c: &Case) -> Vec<Hop> {
    c.cap
        .iter()
        .zip(&c.lat)
        .map(|(&cap, &l)| Hop {
            cap,
            lat_ps: l * 1000,
        })
        .collect()
}

/// The flow alone through the engine: (done - start, ideal), ps.
fn engine_alone(c: &Case) -> (i64, i64) {
    let n = c.cap.len();
    let p = Packets::new(n, c.cfg.clone()).expect("a valid configuration");
    let mut e = Engine::with_physics(c.cap.clone(), c.lat.clone(), Box::new(p));
    e.add_flows(&[FlowSpec::new(c.bytes as f64, (0..n as u32).collect())])
        .unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    let (start, done, ideal) = p.message_times(1);
    (done[0] - start[0], ideal[0])
}

#[test]
fn a_lone_flow_takes_its_ideal_time_to_the_ps() {
    let mut credit_bound = 0;
    for seed in 1..=400 {
        let c = case(seed, 3 << 20);
        let (took, ideal) = engine_alone(&c);
        assert_eq!(
            took, ideal,
            "seed {seed}: {} B on {:?} at {:?} ns, {:?}",
            c.bytes, c.cap, c.lat, c.cfg
        );
        assert_eq!(lone_message(&c.cfg, &hops(&c), c.bytes), Lone::Exact(ideal));
        assert_eq!(
            lone_message_direct(&c.cfg, &hops(&c), c.bytes),
            Lone::Exact(ideal)
        );
        // how many cases the credits slowed: the random cases must cover them
        let mut free = c.cfg.clone();
        free.buffer = u32::MAX / 2;
        if lone_message(&free, &hops(&c), c.bytes) != Lone::Exact(ideal) {
            credit_bound += 1;
        }
    }
    assert!(credit_bound >= 40, "{credit_bound} cases held by credits");
}

#[test]
fn the_periodic_shortcut_gives_the_packet_by_packet_time() {
    // long messages (up to a million packets), checked against the direct pass
    for seed in 1..=300 {
        let mut c = case(1000 + seed, 1 << 20);
        let mut r = Rng::for_case(seed);
        c.bytes = c.bytes * (1 + r.below(300)) + r.below(3) * r.below(c.cfg.mtu as u64);
        let hp = hops(&c);
        let fast = lone_message_last(&c.cfg, &hp, c.bytes);
        assert!(matches!(fast.0, Lone::Exact(_)), "seed {seed}: {fast:?}");
        assert_eq!(
            fast,
            lone_message_direct_last(&c.cfg, &hp, c.bytes),
            "seed {seed}: {} B on {:?} at {:?} ns, {:?}",
            c.bytes,
            c.cap,
            c.lat,
            c.cfg
        );
    }
}

#[test]
fn near_ties_between_a_credit_loop_and_a_link_still_turn_periodic() {
    // a credit loop within a few ps of W packet times on the slowest link: the
    // slowest transients; latencies swept across the tie
    let cfg = PacketConfig::default();
    let wire = cfg.mtu + cfg.header;
    let w = (cfg.buffer / credit_bytes(wire)) as i64;
    for (slow, fast) in [(4e9, 4e9), (10e9 / 8.0, 40e9 / 8.0), (3e9 + 7.0, 12.5e9)] {
        let ser = (wire as f64 * 1e12 / slow).ceil() as i64;
        // host -> switch -> host at one rate: hop 0's loop is 2 L + S + ser
        let tie = ((w - 1) * ser - cfg.switch_latency * 1000) / 2;
        for step in [1i64, 997] {
            for d in -8..=8i64 {
                let l = tie + d * step; // ps
                let hop = |cap: f64| Hop { cap, lat_ps: l };
                for route in [
                    vec![hop(slow), hop(slow)],
                    vec![hop(slow), hop(fast), hop(slow)],
                ] {
                    for bytes in [1u64 << 20, (1 << 24) + 5] {
                        let a = lone_message(&cfg, &route, bytes);
                        assert!(matches!(a, Lone::Exact(_)), "{a:?}");
                        assert_eq!(a, lone_message_direct(&cfg, &route, bytes), "L {l} ps");
                    }
                }
            }
        }
    }
}

#[test]
fn a_bulk_flows_size_costs_no_packets_and_never_overflows() {
    let cfg = PacketConfig::default();
    let hop = |cap: f64, lat_ps: i64| Hop { cap, lat_ps };
    let t0 = std::time::Instant::now();
    // 2^40 B host -(10G)-> leaf -(40G)-> leaf -(10G)-> host, 100 ns links: 3 wires,
    // 2 switches, every packet at 10 Gbit/s and the last one again (as in
    // alone_slow_fast_slow_pays_the_slow_serialisation_once_more), about 890 s
    let route = [
        hop(1.25e9, 100_000),
        hop(5e9, 100_000),
        hop(1.25e9, 100_000),
    ];
    let packets = (1i64 << 40) / 2048;
    let want = 3 * 100_000 + 2 * 100_000 + packets * 1_659_200 + 1_659_200;
    assert_eq!(lone_message(&cfg, &route, 1 << 40), Lone::Exact(want));
    // and with a 10 us middle link, whose credit loop holds the flow
    let route = [
        hop(1.25e9, 100_000),
        hop(5e9, 10_000_000),
        hop(1.25e9, 100_000),
    ];
    assert!(matches!(lone_message(&cfg, &route, 1 << 40), Lone::Exact(t) if t > want / 2 * 3));
    // a bulk flow's 10^18 B or 2^62 B would take years beyond the ps clock: none
    assert_eq!(
        lone_message(&cfg, &route, 1_000_000_000_000_000_000),
        Lone::Never
    );
    assert_eq!(lone_message(&cfg, &route, 1 << 62), Lone::Never);
    assert_eq!(lone_message(&cfg, &route, u64::MAX / 2), Lone::Never);
    // at an exabit per second (a packet per ps), no latencies, 2^60 B fits: 2^49
    // packets of a ps each, the second hop cut through under the first
    let quick = [hop(1.25e17, 0), hop(1.25e17, 0)];
    let zero = PacketConfig {
        switch_latency: 0,
        ..cfg.clone()
    };
    assert_eq!(lone_message(&zero, &quick, 1 << 60), Lone::Exact(1 << 49));
    // with 100 ns switches the credit loop holds it to 7 packets per 100,001 ps:
    // beyond 2^62 ps
    assert_eq!(lone_message(&cfg, &quick, 1 << 60), Lone::Never);
    assert!(t0.elapsed().as_secs_f64() < 1.0, "{:?}", t0.elapsed());
    // and the fabric reports -1 for the bulk flow
    let p = Packets::new(3, cfg).unwrap();
    let mut e = Engine::with_physics(
        vec![1.25e9, 5e9, 1.25e9],
        vec![100, 10_000, 100],
        Box::new(p),
    );
    e.add_flows(&[FlowSpec::new(1e18, vec![0, 1, 2])]).unwrap();
    e.run(1_000_000, u64::MAX);
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    let (start, done, ideal) = p.message_times(1);
    assert_eq!((start[0], done[0], ideal[0]), (0, -1, -1));
}

/// Random routes with one hop's latency set so that its credit loop comes within a
/// few ps of the slowest link's W packet times: the longest transients.
fn near_tie(seed: u64) -> (PacketConfig, Vec<Hop>, u64) {
    let c = case(5000 + seed, 1 << 16);
    let mut r = Rng::for_case(seed);
    let mut hp = hops(&c);
    let wire = c.cfg.mtu + c.cfg.header;
    let w = (c.cfg.buffer / credit_bytes(wire)) as i64;
    let slow = hp
        .iter()
        .map(|x| (wire as f64 * 1e12 / x.cap).ceil() as i64)
        .max()
        .unwrap();
    let i = r.below(hp.len() as u64) as usize;
    let ser_i = (wire as f64 * 1e12 / hp[i].cap).ceil() as i64;
    let l = (w * slow - ser_i - c.cfg.switch_latency * 1000) / 2 + r.below(41) as i64 - 20;
    hp[i].lat_ps = l.max(0);
    let packets = 1 + r.below(1 << 14) + r.below(2) * r.below(1 << 18);
    let mtu = c.cfg.mtu as u64;
    (c.cfg, hp, packets * mtu - r.below(mtu))
}

#[test]
fn random_near_ties_match_the_packet_by_packet_time() {
    for seed in 1..=300 {
        let (cfg, hp, bytes) = near_tie(seed);
        // every hop's times of the last packet, not only its arrival: a jump too
        // far would show upstream first (buffers filling behind the bottleneck)
        let a = lone_message_last(&cfg, &hp, bytes);
        assert!(matches!(a.0, Lone::Exact(_)), "seed {seed}: {a:?}");
        assert_eq!(
            a,
            lone_message_direct_last(&cfg, &hp, bytes),
            "seed {seed}: {bytes} B on {hp:?}, {cfg:?}"
        );
        if seed <= 30 && bytes <= 8 << 20 {
            // and the fabric itself, on a ps-exact latency (ns here: rounded down)
            let c = Case {
                cap: hp.iter().map(|x| x.cap).collect(),
                lat: hp.iter().map(|x| x.lat_ps / 1000).collect(),
                cfg: cfg.clone(),
                bytes,
            };
            let (took, ideal) = engine_alone(&c);
            assert_eq!(took, ideal, "seed {seed}");
            assert_eq!(lone_message(&cfg, &hops(&c), bytes), Lone::Exact(ideal));
        }
    }
}

#[test]
fn a_buffer_too_large_to_watch_is_extrapolated_close() {
    // 64 MiB buffers of 256 B packets (209,715 a window): beyond the regimes
    // watched; a 1 GiB message is extrapolated from the budget's last packets
    let cfg = PacketConfig {
        mtu: 256,
        buffer: 64 << 20,
        ..Default::default()
    };
    let route = [
        Hop {
            cap: 12.5e9,
            lat_ps: 100_000,
        },
        Hop {
            cap: 1.25e9,
            lat_ps: 100_000,
        },
        Hop {
            cap: 5e9,
            lat_ps: 2_000_000,
        },
    ];
    let t0 = std::time::Instant::now();
    let a = lone_message(&cfg, &route, 1 << 30);
    assert!(t0.elapsed().as_secs_f64() < 1.0, "{:?}", t0.elapsed());
    let Lone::Approx(a) = a else { panic!("{a:?}") };
    let Lone::Exact(b) = lone_message_direct(&cfg, &route, 1 << 30) else {
        panic!()
    };
    assert!((a - b).abs() as f64 <= 1e-3 * b as f64, "{a} vs {b}");
}
