//! Links going down and coming back under packets, on random workloads: flows of
//! any size on random paths, links that die and return (some several times), flows
//! re-routed mid-run, retransmission timeouts short and long. However it goes, once
//! every link is back every flow ends, each of its bytes taken once, and the counters
//! add up; the same case runs to the same ns twice; a flow-level twin ends too.

use netsteer_core::engine::{FlowSpec, RunStatus};
use netsteer_core::packet::{PacketConfig, Packets};
use netsteer_core::sharing::MaxMin;
use netsteer_core::{Engine, Ns};

mod common;
use common::Rng;

enum Change {
    Links(Vec<u32>, bool),
    Reroute(usize, Vec<u32>),
}

struct Case {
    cap: Vec<f64>,
    lat: Vec<Ns>,
    flows: Vec<FlowSpec>,
    changes: Vec<(Ns, Change)>,
    cfg: PacketConfig,
}

fn case(seed: u64) -> Case {
    let mut r = Rng::for_case(seed);
    let nch = 4 + r.below(10) as usize;
    let cap: Vec<f64> = (0..nch)
        .map(|_| [4e9, 16e9, 1e9][r.below(3) as usize])
        .collect();
    let lat: Vec<Ns> = (0..nch).map(|_| 50 + r.below(4) as Ns * 100).collect();
    // paths climb the channel numbers: no cycle of buffers waiting on each other
    // (a credit loop would deadlock a lossless fabric with every link up)
    let path = |r: &mut Rng| {
        let mut p = r.path(nch);
        p.sort_unstable();
        p
    };
    let flows: Vec<FlowSpec> = (0..3 + r.below(30))
        .map(|_| {
            let bytes = [1, 100, 2048, 2049, 9000, 65536, 300_000][r.below(7) as usize];
            let mut s = FlowSpec::new(bytes as f64, path(&mut r));
            s.start = Some(r.below(40_000) as Ns);
            s
        })
        .collect();
    let mut changes = vec![];
    for _ in 0..1 + r.below(6) {
        let links: Vec<u32> = (0..1 + r.below(2))
            .map(|_| r.below(nch as u64) as u32)
            .collect();
        let down = r.below(60_000) as Ns;
        let up = down + 1 + r.below(80_000) as Ns;
        changes.push((down, Change::Links(links.clone(), false)));
        changes.push((up, Change::Links(links, true)));
    }
    for _ in 0..r.below(8) {
        let f = r.below(flows.len() as u64) as usize;
        changes.push((r.below(100_000) as Ns, Change::Reroute(f, path(&mut r))));
    }
    // links come back in the order they went down: a link down twice is up at the end
    changes.sort_by_key(|c| c.0);
    let cfg = PacketConfig {
        rc_timeout: [3_000, 20_000, 1_000_000][r.below(3) as usize],
        ..Default::default()
    };
    Case {
        cap,
        lat,
        flows,
        changes,
        cfg,
    }
}

fn play(c: &Case, mut e: Engine) -> Engine {
    e.add_flows(&c.flows).unwrap();
    // the same channel may go down twice before it comes back: it is up once every
    // window that took it down has ended
    let mut downs = vec![0u32; c.cap.len()];
    for (t, ch) in &c.changes {
        e.run(*t, u64::MAX);
        match ch {
            Change::Links(links, up) => {
                for &l in links {
                    let d = &mut downs[l as usize];
                    if *up {
                        *d -= 1;
                        if *d == 0 {
                            e.set_channels_up(&[l], true);
                        }
                    } else {
                        *d += 1;
                        e.set_channels_up(&[l], false);
                    }
                }
            }
            Change::Reroute(f, p) => e.reroute(*f, p).unwrap(),
        }
    }
    assert!(downs.iter().all(|&d| d == 0));
    e
}

#[test]
fn every_flow_ends_each_byte_taken_once_whatever_the_links_did() {
    let mut lossy = 0;
    for seed in 0..400 {
        let c = case(seed);
        let packets = || {
            let p = Packets::new(c.cap.len(), c.cfg.clone()).unwrap();
            play(
                &c,
                Engine::with_physics(c.cap.clone(), c.lat.clone(), Box::new(p)),
            )
        };
        let mut e = packets();
        assert_eq!(e.run_to_end(), RunStatus::Done, "seed {seed}");
        let n = c.flows.len();
        for f in 0..n {
            assert_eq!(e.sent(f), c.flows[f].bytes, "seed {seed} flow {f}");
        }
        let p = e.physics().as_any().downcast_ref::<Packets>().unwrap();
        let mtu = c.cfg.mtu as u64;
        let unique: u64 = c.flows.iter().map(|s| (s.bytes as u64).div_ceil(mtu)).sum();
        // every packet sent is a first or a retransmission; each one taken, dropped,
        // thrown away, or still in flight when the last flow ended
        assert_eq!(p.packets(), unique + p.retransmitted(), "seed {seed}");
        assert!(
            unique + p.dropped() + p.discarded() <= p.packets(),
            "seed {seed}"
        );
        assert_eq!(p.xmit_discards().iter().sum::<u64>(), p.dropped());
        let (lost, resent) = p.flow_losses(n);
        assert_eq!(lost.iter().sum::<u64>(), p.dropped());
        assert_eq!(resent.iter().sum::<u64>(), p.retransmitted());
        assert!(p.retransmitted() == 0 || p.timeouts() + p.naks() > 0);
        lossy += (p.dropped() > 0) as u32;
        // deterministic, to the ns
        let mut again = packets();
        again.run_to_end();
        let done = |e: &Engine| (0..n).map(|f| e.completion(f)).collect::<Vec<_>>();
        assert_eq!(done(&e), done(&again), "seed {seed}");
        // and at flow level the same case ends too
        let mut f = play(
            &c,
            Engine::new(c.cap.clone(), c.lat.clone(), Box::new(MaxMin)),
        );
        assert_eq!(f.run_to_end(), RunStatus::Done, "seed {seed}");
    }
    // the cases do lose packets (else this test would show nothing)
    assert!(lossy > 100, "{lossy}");
}
