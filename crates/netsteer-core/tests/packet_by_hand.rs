//! The packet fabric against numbers worked out by hand (and the flow engine).
//!
//! Channels are numbered freely here: the packet model needs no nodes, only
//! channels (an input buffer per VL sits at each channel's far end) and paths.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::packet::{credit_bytes, PacketConfig, Packets};
use netsteer_core::sharing::MaxMin;
use netsteer_core::{Engine, Ns};

const CAP: f64 = 4e9; // 32 Gbit/s, QDR 4x data rate
const LAT: Ns = 100;

fn packet_engine(n: usize, cfg: PacketConfig) -> Engine {
    let p = Packets::new(n, cfg).expect("a valid configuration");
    Engine::with_physics(vec![CAP; n], vec![LAT; n], Box::new(p))
}

fn flow_engine(n: usize) -> Engine {
    Engine::new(vec![CAP; n], vec![LAT; n], Box::new(MaxMin))
}

fn ser_ps(wire: u32) -> i64 {
    (wire as f64 * 1e12 / CAP).ceil() as i64
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

#[test]
fn one_message_takes_latency_plus_size_over_bandwidth_plus_headers() {
    let cfg = PacketConfig::default();
    let (mtu, hdr, sw) = (cfg.mtu, cfg.header, cfg.switch_latency);
    // host -> switch -> switch -> host: three channels
    let mut e = packet_engine(3, cfg);
    let bytes = 1u64 << 20;
    e.add_flows(&[FlowSpec::new(bytes as f64, vec![0, 1, 2])])
        .unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    // cut-through pipeline: every packet serialised once at line rate, plus the
    // three wires and two switches
    let packets = bytes / mtu as u64;
    let want_ps = 3 * LAT * 1000 + 2 * sw * 1000 + packets as i64 * ser_ps(mtu + hdr);
    assert_eq!(e.completion(0), (want_ps + 999) / 1000);
    // and the flow engine: latency + size / bandwidth, within the headers' 1.3%
    let mut f = flow_engine(3);
    f.add_flows(&[FlowSpec::new(bytes as f64, vec![0, 1, 2])])
        .unwrap();
    f.run_to_end();
    let ratio = e.completion(0) as f64 / f.completion(0) as f64;
    assert!(
        close(ratio, 1.0 + hdr as f64 / mtu as f64, 0.005),
        "{ratio}"
    );
}

#[test]
fn store_and_forward_pays_each_hop_serialisation_once_more() {
    let cfg = PacketConfig {
        cut_through: false,
        ..Default::default()
    };
    let wire = cfg.mtu + cfg.header;
    let sw = cfg.switch_latency;
    let mut e = packet_engine(3, cfg);
    e.add_flows(&[FlowSpec::new(2048.0 * 10.0, vec![0, 1, 2])])
        .unwrap();
    e.run_to_end();
    let want_ps = 3 * LAT * 1000 + 2 * sw * 1000 + 10 * ser_ps(wire) + 2 * ser_ps(wire);
    assert_eq!(e.completion(0), (want_ps + 999) / 1000);
}

fn mixed_engine(caps: Vec<f64>) -> Engine {
    let n = caps.len();
    let p = Packets::new(n, PacketConfig::default()).expect("a valid configuration");
    Engine::with_physics(caps, vec![LAT; n], Box::new(p))
}

#[test]
fn onto_a_faster_link_a_packet_goes_once_its_tail_is_in() {
    // host -(CAP)-> switch -(2 CAP)-> host: cut-through cannot send faster than the
    // packet comes in, so the switch stores each packet; the last one pays its
    // serialisation on the fast link once more
    let cfg = PacketConfig::default();
    let (wire, sw) = (cfg.mtu + cfg.header, cfg.switch_latency);
    let mut e = mixed_engine(vec![CAP, 2.0 * CAP]);
    e.add_flows(&[FlowSpec::new(2048.0 * 10.0, vec![0, 1])])
        .unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    let fast = (wire as f64 * 1e12 / (2.0 * CAP)).ceil() as i64;
    let want_ps = 2 * LAT * 1000 + sw * 1000 + 10 * ser_ps(wire) + fast;
    assert_eq!(e.completion(0), (want_ps + 999) / 1000);
    // alone on the fabric: its time is its ideal one, no queueing
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    let (start, done, ideal) = p.message_times(1);
    assert_eq!(done[0] - start[0], ideal[0]);
}

#[test]
fn a_fast_link_between_slow_ones_carries_their_sum() {
    // four hosts -(CAP)-> s0 -(4 CAP)-> s1 -(CAP)-> four hosts, one flow each: the
    // fast link's input at s1 feeds four slower outputs at once, and s0's output
    // takes four slower inputs, so each flow runs at CAP as at flow level
    let mut caps = vec![CAP; 9];
    caps[4] = 4.0 * CAP;
    let specs: Vec<FlowSpec> = (0..4u32)
        .map(|i| FlowSpec::new(4e6, vec![i, 4, 5 + i]))
        .collect();
    let mut p = mixed_engine(caps.clone());
    p.add_flows(&specs).unwrap();
    assert_eq!(p.run_to_end(), RunStatus::Done);
    let mut f = Engine::new(caps, vec![LAT; 9], Box::new(MaxMin));
    f.add_flows(&specs).unwrap();
    f.run_to_end();
    let hdr = 1.0 + 26.0 / 2048.0;
    for i in 0..4 {
        let (pt, ft) = (p.completion(i) as f64, f.completion(i) as f64);
        assert!(close(pt / hdr, ft, 0.02), "flow {i}: packet {pt} flow {ft}");
    }
}

#[test]
fn n_flows_into_one_host_get_one_nth_each_as_at_flow_level() {
    // three hosts -> switch -> one host: channels 0,1,2 in, 3 out
    for n in [2usize, 3] {
        let specs: Vec<FlowSpec> = (0..n)
            .map(|i| FlowSpec::new(4e6, vec![i as u32, 3]))
            .collect();
        let mut p = packet_engine(4, PacketConfig::default());
        p.add_flows(&specs).unwrap();
        p.run_to_end();
        let mut f = flow_engine(4);
        f.add_flows(&specs).unwrap();
        f.run_to_end();
        let hdr = 1.0 + 26.0 / 2048.0;
        for i in 0..n {
            let (pt, ft) = (p.completion(i) as f64, f.completion(i) as f64);
            assert!(
                close(pt / hdr, ft, 0.02),
                "flow {i} of {n}: packet {pt} flow {ft}"
            );
        }
    }
}

#[test]
fn a_parking_lot_gets_its_max_min_shares() {
    // a chain of switches s0-s1-s2-s3: channels 0 (h0->s0), 1 (s0->s1), 2 (s1->s2),
    // 3 (s2->s3), 4 (s3->h3), 5 (h1->s1), 6 (s2->h2), 7 (h2->s2); every link in the
    // chain carries the long flow and one short one: max-min gives each half
    let specs = vec![
        FlowSpec::new(8e6, vec![0, 1, 2, 3, 4]),
        FlowSpec::new(8e6, vec![5, 2, 6]),
        FlowSpec::new(8e6, vec![7, 3, 4]),
    ];
    let mut p = packet_engine(8, PacketConfig::default());
    p.add_flows(&specs).unwrap();
    p.run(1_500_000, u64::MAX);
    let mut f = flow_engine(8);
    f.add_flows(&specs).unwrap();
    f.run(1_500_000, u64::MAX);
    let hdr = 1.0 + 26.0 / 2048.0;
    for i in 0..3 {
        let (ps, fs) = (p.sent(i) * hdr, f.sent(i));
        assert!(close(ps, fs, 0.02), "flow {i}: packet {ps} flow {fs}");
    }
}

/// Host A (channel 0) sends to the hot spot H (channel 3) and to the victim's
/// destination V (channel 4); hosts B and C (channels 1, 2) send to H too.
fn hot_spot(victim_sl: u8, cfg: PacketConfig) -> (f64, f64) {
    let mut e = packet_engine(5, cfg);
    e.add_flows(&[
        FlowSpec::new(1e9, vec![0, 3]), // A -> H
        FlowSpec::new(1e9, vec![0, 4]), // A -> V: the victim
        FlowSpec::new(1e9, vec![1, 3]), // B -> H
        FlowSpec::new(1e9, vec![2, 3]), // C -> H
    ])
    .unwrap();
    e.set_sl(&[1], &[victim_sl]).unwrap();
    let (t0, t1) = (200_000, 1_200_000);
    e.run(t0, u64::MAX);
    let s0 = e.sent(1);
    e.run(t1, u64::MAX);
    let rate = (e.sent(1) - s0) / ((t1 - t0) as f64 * 1e-9);
    let payload = 2048.0 / (2048.0 + 26.0);
    (rate / (CAP * payload), e.sent(0))
}

#[test]
fn head_of_line_blocking_takes_the_victims_share_and_a_vl_gives_it_back() {
    // Max-min: H's link is split three ways (1/3 each), so A -> V gets the 2/3 of A's
    // link that A -> H leaves. Packets: A's send queues alternate, so A's input buffer
    // at the switch holds H, V, H, V... in FIFO order. Output H serves its three
    // inputs in turn, one packet each: A's H packet leaves once every three packet
    // times, and the V packet behind it can only follow it. One V packet per three
    // packet times: the victim gets 1/3, not 2/3.
    let (share, _) = hot_spot(0, PacketConfig::default());
    assert!(
        close(share, 1.0 / 3.0, 0.05),
        "victim on the hot spot's VL: {share}"
    );
    // On its own VL the victim's packets have their own buffer and credits: the H
    // packets block only each other, and it gets its max-min share back.
    let cfg = PacketConfig {
        vls: 2,
        vlarb_low: vec![(0, 64), (1, 64)],
        sl2vl: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    let (share, _) = hot_spot(1, cfg);
    assert!(
        close(share, 2.0 / 3.0, 0.05),
        "victim on its own VL: {share}"
    );
}

fn two_vls(cfg: PacketConfig, slow_high: bool) -> (f64, f64) {
    // channel 0: the shared link; the flow on VL 1 then crosses channel 1, which is
    // 5x slower when `slow_high` (it can only ask for a fifth of the link)
    let mut caps = vec![CAP, CAP, CAP];
    if slow_high {
        caps[1] = CAP / 5.0;
    }
    let p = Packets::new(3, cfg).unwrap();
    let mut e = Engine::with_physics(caps, vec![LAT; 3], Box::new(p));
    e.add_flows(&[
        FlowSpec::new(1e10, vec![0, 2]),
        FlowSpec::new(1e10, vec![0, 1]),
    ])
    .unwrap();
    e.set_sl(&[0, 1], &[0, 1]).unwrap();
    let (t0, t1) = (100_000, 2_100_000);
    e.run(t0, u64::MAX);
    let (a0, b0) = (e.sent(0), e.sent(1));
    e.run(t1, u64::MAX);
    let total = (e.sent(0) - a0) + (e.sent(1) - b0);
    ((e.sent(0) - a0) / total, (e.sent(1) - b0) / total)
}

#[test]
fn low_table_weights_split_a_link() {
    let wire = 2048 + 26;
    for (w0, w1) in [(128u8, 255u8), (64, 192), (255, 32)] {
        let cfg = PacketConfig {
            vls: 2,
            vlarb_low: vec![(0, w0), (1, w1)],
            sl2vl: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ..Default::default()
        };
        let (s0, s1) = two_vls(cfg, false);
        // an entry sends while weight is left, so ceil(weight * 64 / packet) packets a turn
        let (p0, p1) = (
            (w0 as f64 * 64.0 / wire as f64).ceil(),
            (w1 as f64 * 64.0 / wire as f64).ceil(),
        );
        assert!(close(s1 / s0, p1 / p0, 0.01), "{w0}:{w1}: {s0} {s1}");
        assert!(
            close(s1 / s0, w1 as f64 / w0 as f64, 0.12),
            "{w0}:{w1}: {s0} {s1}"
        );
    }
}

#[test]
fn low_table_weights_that_are_whole_packets_split_within_two_percent() {
    let cfg = PacketConfig {
        vls: 2,
        header: 0,
        vlarb_low: vec![(0, 64), (1, 192)], // 2 and 6 packets of 2 KiB
        sl2vl: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    let (s0, s1) = two_vls(cfg, false);
    assert!(close(s1 / s0, 3.0, 0.02), "{s0} {s1}");
}

#[test]
fn the_high_table_takes_what_it_asks_up_to_the_high_limit() {
    let cfg = |limit| PacketConfig {
        vls: 2,
        vlarb_high: vec![(1, 255)],
        vlarb_low: vec![(0, 64)],
        high_limit: limit,
        sl2vl: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    // asking for everything, limit 1 (4 KiB): two high packets of 2,074 B (4,148 B)
    // reach it, then one low packet: the low VL keeps 1/3
    let (low, high) = two_vls(cfg(1), false);
    assert!(
        close(high, 2.0 / 3.0, 0.02) && close(low, 1.0 / 3.0, 0.02),
        "{low} {high}"
    );
    // limit 3 (12 KiB): six high packets, then one low
    let (low, _) = two_vls(cfg(3), false);
    assert!(close(low, 1.0 / 7.0, 0.02), "{low}");
    // asking for a fifth (its path goes on over a link 5x slower): it takes a fifth,
    // and the low VL keeps the rest
    let (low, high) = two_vls(cfg(255), true);
    assert!(
        close(high, 0.2, 0.03) && close(low, 0.8, 0.03),
        "{low} {high}"
    );
}

#[test]
fn credits_never_overrun_a_buffer_and_xmit_wait_shows_the_hot_spot() {
    let cfg = PacketConfig::default();
    let buffer = cfg.buffer;
    let mut e = packet_engine(5, cfg);
    e.add_flows(&[
        FlowSpec::new(4e6, vec![0, 3]),
        FlowSpec::new(4e6, vec![1, 3]),
        FlowSpec::new(4e6, vec![2, 4]),
    ])
    .unwrap();
    e.run_to_end();
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    assert!(p.peak_occupancy().iter().all(|&b| b <= buffer));
    let wait = p.xmit_wait_ps();
    // hosts 0 and 1 feed the hot spot (channel 3) and wait for credits; host 2 never
    assert!(wait[0] > 0 && wait[1] > 0, "{wait:?}");
    assert_eq!(wait[2], 0);
    // the buffers at the ends of the hosts' links filled up to the brim
    assert!(p.peak_occupancy()[0] > buffer - credit_bytes(2074));
}

#[test]
fn runs_are_deterministic() {
    let run = || {
        let mut e = packet_engine(5, PacketConfig::default());
        let specs: Vec<FlowSpec> = (0..40)
            .map(|i| {
                FlowSpec::new(
                    10_000.0 + 777.0 * i as f64,
                    vec![(i % 3) as u32, 3 + (i % 2) as u32],
                )
            })
            .collect();
        e.add_flows(&specs).unwrap();
        e.run_to_end();
        (0..40).map(|i| e.completion(i)).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn bad_parameters_are_named() {
    let bad = |f: fn(&mut PacketConfig)| {
        let mut c = PacketConfig::default();
        f(&mut c);
        Packets::new(1, c).err().unwrap().0
    };
    assert_eq!(bad(|c| c.mtu = 1000), "mtu");
    assert_eq!(bad(|c| c.mtu = 8192), "mtu");
    assert_eq!(bad(|c| c.buffer = 1024), "buffer");
    assert_eq!(bad(|c| c.sl2vl[3] = 4), "sl2vl");
    assert_eq!(bad(|c| c.vlarb_low = vec![(2, 1)]), "vlarb_low");
}

#[test]
fn stepping_by_budget_or_by_time_changes_nothing() {
    // the physics runs ahead between the engine's own events; a run cut into
    // budgets of 7 events, or into 1 us steps, must end exactly as one run
    let specs: Vec<FlowSpec> = (0..30)
        .map(|i| {
            let mut s = FlowSpec::new(
                5_000.0 + 1_111.0 * i as f64,
                vec![(i % 3) as u32, 3 + (i % 2) as u32],
            );
            s.start = Some(i as i64 * 700);
            s
        })
        .collect();
    let fresh = || {
        let mut e = packet_engine(5, PacketConfig::default());
        e.add_flows(&specs).unwrap();
        e
    };
    let mut one = fresh();
    one.run_to_end();
    let want: Vec<Ns> = (0..30).map(|i| one.completion(i)).collect();
    let mut by_budget = fresh();
    while by_budget.run(Ns::MAX, 7) == RunStatus::Budget {}
    let mut by_time = fresh();
    let mut t = 0;
    while by_time.run(t, u64::MAX) != RunStatus::Done {
        t += 1_000;
    }
    for e in [&by_budget, &by_time] {
        assert_eq!((0..30).map(|i| e.completion(i)).collect::<Vec<_>>(), want);
    }
}

#[test]
fn a_flow_moved_to_another_sl_in_flight_takes_its_vl() {
    // two flows share a link on VL 0 (half each); half-way, flow 1 moves to SL 1 ->
    // VL 1, which has 3x the low-table weight: from then on it gets 3/4
    let cfg = PacketConfig {
        vls: 2,
        header: 0,
        vlarb_low: vec![(0, 32), (1, 96)],
        sl2vl: [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    let mut e = packet_engine(3, cfg);
    e.add_flows(&[
        FlowSpec::new(1e10, vec![0, 1]),
        FlowSpec::new(1e10, vec![0, 2]),
    ])
    .unwrap();
    e.run(500_000, u64::MAX);
    let (a0, b0) = (e.sent(0), e.sent(1));
    assert!(close(b0 / a0, 1.0, 0.02), "{a0} {b0}");
    e.set_sl(&[1], &[1]).unwrap();
    e.run(1_000_000, u64::MAX);
    let (a1, b1) = (e.sent(0) - a0, e.sent(1) - b0);
    assert!(close(b1 / (a1 + b1), 0.75, 0.02), "{a1} {b1}");
}

/// One flow of seven full packets, host -> switch (16 GB/s) -> host (4 GB/s): the
/// switch's buffer (7 packets) takes them all at once and sends them on at the slow
/// link's rate. The slow link dies at `t1` and comes back at `t2`.
fn one_flow_through_a_dying_link(t1: Ns, t2: Option<Ns>) -> (Engine, RunStatus) {
    let cfg = PacketConfig {
        rc_timeout: 10_000, // 10 us
        ..Default::default()
    };
    let p = Packets::new(2, cfg).unwrap();
    let mut e = Engine::with_physics(vec![16e9, CAP], vec![LAT; 2], Box::new(p));
    e.add_flows(&[FlowSpec::new(7.0 * 2048.0, vec![0, 1])])
        .unwrap();
    assert_eq!(e.run(t1, u64::MAX), RunStatus::Until);
    e.set_channels_up(&[1], false);
    let status = match t2 {
        Some(t2) => {
            assert_eq!(e.run(t2, u64::MAX), RunStatus::Until);
            e.set_channels_up(&[1], true);
            e.run_to_end()
        }
        None => e.run_to_end(),
    };
    (e, status)
}

#[test]
fn a_link_that_dies_drops_what_waits_for_it_and_the_sender_goes_back_after_its_timeout() {
    let cfg = PacketConfig::default();
    let (mtu, wire, sw) = (cfg.mtu as u64, cfg.mtu + cfg.header, cfg.switch_latency);
    // in ps
    let (lat, t_out) = (LAT * 1000, 10_000 * 1000);
    // a packet takes 518.5 ns on the slow link; packet i crosses it in
    // [a + i * slow, a + (i + 1) * slow): the head of packet 0 is at the switch one
    // wire and one switch latency after it left
    let slow = ser_ps(wire);
    let a = lat + sw * 1000;
    let t1: Ns = 1000;
    let on_wire = (t1 * 1000 - a) / slow; // the packet being sent when the link dies
    assert_eq!(on_wire, 1);
    // it finishes; the five queued behind it are dropped. Their credits must come
    // back: without them only two packets' worth would be left for the five resent
    let lost = 7 - on_wire - 1;
    // the destination's last progress: the packet on the wire arriving; the timer
    // goes off rc_timeout later and the sender sends the lost ones again
    let last = a + (on_wire + 1) * slow + lat;
    let resend = |from: i64| from + a + lost * slow + lat; // the same pipeline
    let ns = |ps: i64| (ps + 999) / 1000;
    for (t2, start) in [(5_000, last + t_out), (20_000, 20_000 * 1000)] {
        // the link is back before the timeout (the sender goes on at the timeout), or
        // after it (the timeout went back while the path was down: it goes on at t2)
        let (e, status) = one_flow_through_a_dying_link(t1, Some(t2));
        assert_eq!(status, RunStatus::Done);
        assert_eq!(e.completion(0), ns(resend(start)), "link back at {t2} ns");
        assert_eq!(e.sent(0), 7.0 * mtu as f64);
        let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
        assert_eq!(p.dropped(), lost as u64);
        assert_eq!(p.xmit_discards(), &[0, lost as u64][..]);
        assert_eq!((p.timeouts(), p.retransmitted()), (1, lost as u64));
        assert_eq!(p.packets(), 7 + lost as u64);
        assert_eq!(p.flow_losses(1), (vec![lost as u64], vec![lost as u64]));
        assert_eq!(p.discarded(), 0);
    }
    // a link that never comes back: the flow waits for it, as at flow level
    let (e, status) = one_flow_through_a_dying_link(t1, None);
    assert_eq!(status, RunStatus::Stalled);
    assert_eq!(e.sent(0), ((on_wire + 1) as u64 * mtu) as f64);
    // every credit came back, those of the dropped packets too: nothing upstream of
    // the dead link is left waiting for buffer space
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    let buffer = PacketConfig::default().buffer as i64;
    assert_eq!(p.credits(), &[buffer, buffer][..]);
    assert_eq!(
        (p.dropped(), p.timeouts(), p.retransmitted()),
        (lost as u64, 1, 0)
    );
    let mut f = Engine::new(vec![16e9, CAP], vec![LAT; 2], Box::new(MaxMin));
    f.add_flows(&[FlowSpec::new(7.0 * 2048.0, vec![0, 1])])
        .unwrap();
    f.run(t1, u64::MAX);
    f.set_channels_up(&[1], false);
    assert_eq!(f.run_to_end(), RunStatus::Stalled);
}

#[test]
fn the_rc_timeout_is_positive_and_at_most_infinibands_longest() {
    let bad = |t: Ns| {
        let c = PacketConfig {
            rc_timeout: t,
            ..Default::default()
        };
        Packets::new(1, c).err().map(|e| e.0)
    };
    assert_eq!(bad(0), Some("rc_timeout"));
    assert_eq!(bad(-1), Some("rc_timeout"));
    assert_eq!(bad(4096 << 31), None);
    assert_eq!(bad((4096 << 31) + 1), Some("rc_timeout"));
    // the default: UCX's 1 s as the HCA takes it, 4.096 us x 2^18
    assert_eq!(PacketConfig::default().rc_timeout, 4096 << 18);
}

#[test]
fn packets_behind_a_loss_have_the_destination_nak_and_the_sender_goes_back_at_once() {
    // host -(0)-> switch -(1 or 2)-> switch -(3)-> host; channel 1 dies under the
    // flow and the flow moves to 2 at once: the packets queued for 1 are lost, the
    // next ones come in by 2 behind the hole, and the destination NAKs it. The
    // sender goes back about a path's latency later, not after rc_timeout (1.07 s)
    let p = Packets::new(4, PacketConfig::default()).unwrap();
    let mut e = Engine::with_physics(vec![16e9, CAP, CAP, CAP], vec![LAT; 4], Box::new(p));
    let bytes = 64.0 * 2048.0;
    e.add_flows(&[FlowSpec::new(bytes, vec![0, 1, 3])]).unwrap();
    assert_eq!(e.run(2_000, u64::MAX), RunStatus::Until);
    e.set_channels_up(&[1], false);
    e.reroute(0, &[0, 2, 3]).unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    assert_eq!(e.sent(0), bytes);
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    assert!(p.dropped() > 0);
    assert_eq!((p.naks(), p.timeouts()), (1, 0));
    assert!(
        p.discarded() > 0,
        "packets behind the hole were thrown away"
    );
    assert_eq!(p.retransmitted() + 64, p.packets());
    // 64 packets and the ones sent again at line rate, a few latencies besides
    let wire = ser_ps(2048 + 26);
    let bound = 2_000 + ((64 + p.retransmitted() as i64) * wire + 20 * LAT * 1000) / 1000;
    assert!(e.completion(0) < bound, "{} >= {bound}", e.completion(0));
}

/// One flow alone on `caps` (one channel each, in order) with latencies `lats`:
/// its completion (ns), and its time alone as the fabric measured it and as
/// `Packets` expects it (`ideal`, ps).
fn alone(caps: Vec<f64>, lats: Vec<Ns>, cfg: PacketConfig, bytes: u64) -> (Ns, i64, i64) {
    let n = caps.len();
    let p = Packets::new(n, cfg).expect("a valid configuration");
    let mut e = Engine::with_physics(caps, lats, Box::new(p));
    e.add_flows(&[FlowSpec::new(bytes as f64, (0..n as u32).collect())])
        .unwrap();
    assert_eq!(e.run_to_end(), RunStatus::Done);
    let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
    let (start, done, ideal) = p.message_times(1);
    (e.completion(0), done[0] - start[0], ideal[0])
}

#[test]
fn alone_slow_fast_slow_pays_the_slow_serialisation_once_more() {
    // pgft link_bandwidth [10Gbps, 40Gbps], host -> leaf -> spine -> leaf -> host,
    // 64 KiB, cut-through: onto the fast uplink each packet is stored (its tail must
    // be in); from the fast link onto the slow one it is cut through, so the last
    // packet is serialised at 10 Gbit/s twice: 4 wires + 3 switches + 32 packets at
    // 10 Gbit/s + the last one again at 10 Gbit/s (the fast hops hide under it)
    let (slow, fast) = (10e9 / 8.0, 40e9 / 8.0);
    let (t, took, ideal) = alone(
        vec![slow, fast, fast, slow],
        vec![LAT; 4],
        PacketConfig::default(),
        64 * 1024,
    );
    let ser10 = 1_659_200; // 2,074 B at 10 Gbit/s, ps
    let want = 4 * 100_000 + 3 * 100_000 + 32 * ser10 + ser10;
    assert_eq!(want, 55_453_600);
    assert_eq!(took, want);
    assert_eq!(ideal, want, "no queueing alone");
    assert_eq!(t, 55_454);
}

#[test]
fn alone_store_and_forward_short_last_packet_waits_for_the_one_before() {
    // 5,000 B = 2,048 + 2,048 + 904: the short last packet is in at the switch before
    // the second one has left it, and waits: done at the switch's second packet end
    // (100 + 518.5 x 2 + 100 + 100 + 518.5) plus its own 232.5 and the wire
    let cfg = PacketConfig {
        cut_through: false,
        ..Default::default()
    };
    let (t, took, ideal) = alone(vec![CAP; 2], vec![LAT; 2], cfg, 5000);
    let want = 518_500 + 100_000 + 100_000 + 2 * 518_500 + ser_ps(904 + 26) + 100_000;
    assert_eq!(want, 2_088_000);
    assert_eq!((took, ideal, t), (want, want, 2088));
}

#[test]
fn alone_credits_hold_a_long_link() {
    // 10 us links, 16 KiB buffers (7 packets of 2,112 credit bytes), 1 MiB: the host
    // sends 7 packets per credit loop (10 us out, 100 ns switch, 518.5 ns on, 10 us
    // back: 20,618.5 ns); the 512th packet starts after 73 loops and takes 20,618.5 ns
    // more to the destination
    let cfg = PacketConfig::default();
    assert_eq!(cfg.buffer / credit_bytes(cfg.mtu + cfg.header), 7);
    let (t, took, ideal) = alone(vec![CAP; 2], vec![10_000; 2], cfg, 1 << 20);
    let lp = 20_000_000 + 100_000 + 518_500;
    let want = 73 * lp + lp;
    assert_eq!(want, 1_525_769_000);
    assert_eq!((took, ideal, t), (want, want, 1_525_769));
}
