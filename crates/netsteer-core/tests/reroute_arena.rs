//! Re-routing a flow in flight reuses its path room: the arena does not grow with
//! every re-route (it used to append each path of a new length and keep the old).

use netsteer_core::engine::FlowSpec;
use netsteer_core::sharing::MaxMin;
use netsteer_core::Engine;

#[test]
fn rerouting_back_and_forth_keeps_the_path_arena_bounded() {
    let mut e = Engine::new(vec![1e9; 8], vec![0; 8], Box::new(MaxMin));
    e.add_flows(&[
        FlowSpec::new(1e9, vec![0, 1]),
        FlowSpec::new(1e9, vec![2, 3]),
    ])
    .unwrap();
    e.run(1_000, u64::MAX);
    let short = [0u32, 1];
    let long = [0u32, 4, 5, 1];
    for i in 0..1000 {
        let p: &[u32] = if i % 2 == 0 { &long } else { &short };
        e.reroute(0, p).unwrap();
        e.reroute(
            1,
            if i % 3 == 0 {
                &[2, 6, 7, 3][..]
            } else {
                &[2, 3][..]
            },
        )
        .unwrap();
        e.run(e.now() + 1_000, u64::MAX);
    }
    // each flow holds one room of its longest path: 4 + 4 entries, plus the first 2 + 2
    // given back when they grew (kept for the next path that fits)
    assert!(
        e.path_arena_len() <= 12,
        "arena grew to {}",
        e.path_arena_len()
    );
    assert_eq!(e.flow_path(0), &short[..]);
}

#[test]
fn a_rerouted_flow_keeps_its_bytes_and_ends_on_time() {
    // 1 GB at 1 GB/s; half-way it moves to a path of another length and the same speed
    let mut e = Engine::new(vec![1e9; 4], vec![0; 4], Box::new(MaxMin));
    e.add_flows(&[FlowSpec::new(1e9, vec![0])]).unwrap();
    e.run(500_000_000, u64::MAX);
    e.reroute(0, &[1, 2, 3]).unwrap();
    e.run_to_end();
    assert_eq!(e.completion(0), 1_000_000_000);
    assert_eq!(e.sent(0), 1e9);
}
