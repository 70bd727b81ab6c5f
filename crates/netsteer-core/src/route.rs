//! Routers: the path of one message between two hosts, resolved inside the engine.
//!
//! A streamed MPI job asks for a path per message as it is sent, so paths never
//! cross into Python. [`TableRouter`] walks destination tables (the compact rows of
//! `netsteer.routing.Routing`, with its ECMP groups); [`PgftDmodk`] computes D-mod-K on a PGFT in
//! closed form, so trees of tens of thousands of hosts need no tables at all.

use crate::paths::{walk_one, EcmpHash, Flow, Groups, Tables};

/// Resolves host-to-host paths into channel ids.
pub trait Router: Send + Sync {
    /// Append the channels from host index `src` to host index `dst` to `out`
    /// (nothing when `src == dst`).
    fn path(&self, src: usize, dst: usize, out: &mut Vec<u32>) -> Result<(), String>;
    fn n_hosts(&self) -> usize;
    /// Bytes this router holds, for memory estimates.
    fn bytes(&self) -> usize;
}

/// Plain destination tables, owned; see [`Tables`] for the layout.
pub struct TableRouter {
    table: Vec<i32>,
    row_of: Vec<i64>,
    n_hosts: usize,
    host_port: Vec<i64>,
    out_channel: Vec<i64>,
    n_slots: usize,
    channel_dst: Vec<i64>,
    is_host: Vec<bool>,
    give_up: Vec<bool>,
    host_nodes: Vec<i64>,
    limit: usize,
    group_ptr: Vec<i64>,
    group_ports: Vec<i32>,
    hash: EcmpHash,
}

impl TableRouter {
    /// Check the shapes and indices once, so that walking never reads out of range.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        table: Vec<i32>,
        row_of: Vec<i64>,
        n_hosts: usize,
        host_port: Vec<i64>,
        out_channel: Vec<i64>,
        n_slots: usize,
        channel_dst: Vec<i64>,
        is_host: Vec<bool>,
        give_up: Vec<bool>,
        host_nodes: Vec<i64>,
    ) -> Result<Self, String> {
        let n_nodes = row_of.len();
        let n_rows = if n_hosts == 0 {
            0
        } else {
            table.len() / n_hosts
        };
        let n_ch = channel_dst.len() as i64;
        let node_ok = |x: &i64| (0..n_nodes as i64).contains(x);
        if n_hosts == 0 || table.len() != n_rows * n_hosts {
            return Err("table is not rows x hosts".into());
        }
        if host_port.len() != n_nodes
            || is_host.len() != n_nodes
            || give_up.len() != n_nodes
            || out_channel.len() != n_nodes * n_slots
            || host_nodes.len() != n_hosts
        {
            return Err("tables and topology differ in their node or host count".into());
        }
        if row_of.iter().any(|&r| r < -1 || r >= n_rows as i64)
            || out_channel.iter().any(|&c| c >= n_ch)
            || !channel_dst.iter().all(node_ok)
            || !host_nodes.iter().all(node_ok)
        {
            return Err("tables name rows, channels or nodes that do not exist".into());
        }
        let limit = give_up.iter().filter(|&&g| !g).count() + 1;
        Ok(TableRouter {
            table,
            row_of,
            n_hosts,
            host_port,
            out_channel,
            n_slots,
            channel_dst,
            is_host,
            give_up,
            host_nodes,
            limit,
            group_ptr: vec![0],
            group_ports: Vec::new(),
            hash: EcmpHash::Dst,
        })
    }

    /// Resolve ECMP group entries (`-2 - g`) by `hash`: group `g`'s ports are
    /// `ports[ptr[g]..ptr[g + 1]]`. A message has no flow id, so the `Flow` hash is
    /// refused: each (source, destination) pair keeps one path, as with `SrcDst`.
    pub fn with_groups(
        mut self,
        ptr: Vec<i64>,
        ports: Vec<i32>,
        hash: EcmpHash,
    ) -> Result<Self, String> {
        if hash == EcmpHash::Flow {
            return Err("streamed messages have no flow id for the 'flow' ECMP hash".into());
        }
        let ok = ptr.first() == Some(&0)
            && ptr.windows(2).all(|w| w[0] < w[1])
            && *ptr.last().unwrap() as usize == ports.len()
            && ports.iter().all(|&p| p >= 0 && (p as usize) < self.n_slots);
        if !ok {
            return Err("ECMP groups must be non-empty lists of existing ports".into());
        }
        self.group_ptr = ptr;
        self.group_ports = ports;
        self.hash = hash;
        Ok(self)
    }

    fn view(&self) -> Tables<'_> {
        Tables {
            table: &self.table,
            row_of: &self.row_of,
            n_hosts: self.n_hosts,
            host_port: &self.host_port,
            out_channel: &self.out_channel,
            n_slots: self.n_slots,
            channel_dst: &self.channel_dst,
            is_host: &self.is_host,
            give_up: &self.give_up,
            limit: self.limit,
            groups: Groups {
                ptr: &self.group_ptr,
                ports: &self.group_ports,
                hash: self.hash,
            },
        }
    }
}

impl Router for TableRouter {
    fn path(&self, src: usize, dst: usize, out: &mut Vec<u32>) -> Result<(), String> {
        if src >= self.n_hosts || dst >= self.n_hosts {
            return Err(format!("host {} does not exist", src.max(dst)));
        }
        let mark = out.len();
        let (s, t) = (self.host_nodes[src], self.host_nodes[dst]);
        let flow = Flow { src, dst, id: 0 };
        if walk_one(&self.view(), s, &flow, t, out) {
            Ok(())
        } else {
            out.truncate(mark);
            Err(format!(
                "no route from host {src} to host {dst} (missing entry, loop, \
                 circuit or wrong host on the way)"
            ))
        }
    }
    fn n_hosts(&self) -> usize {
        self.n_hosts
    }
    fn bytes(&self) -> usize {
        self.table.len() * 4
            + (self.row_of.len() + self.host_port.len() + self.out_channel.len()) * 8
            + (self.channel_dst.len() + self.host_nodes.len()) * 8
            + self.is_host.len() * 2
            + self.group_ptr.len() * 8
            + self.group_ports.len() * 4
    }
}

/// D-mod-K on a PGFT (`netsteer.routing.dmodk`), computed from the labels: no table,
/// no memory lookups per hop. Going up towards host position `p`, a node at level `l`
/// takes slot `s = (p / prod(up[..l])) mod (up[l] * parallel[l])` (parent `s mod up[l]`,
/// cable `s / up[l]`); the first switch whose label digits `>= l` are the destination's
/// turns down, to the child whose digit `l-1` is the destination's, on cable
/// `(p / prod(up[..l])) mod parallel[l-1]`. A cable's channel follows from the order in
/// which `netsteer.topology.pgft` creates links (level, child position, parent, cable),
/// checked against the topology's port table when the router is built.
pub struct PgftDmodk {
    levels: usize,
    down: Vec<u64>,
    up: Vec<u64>,
    par: Vec<u64>,
    cum: Vec<u64>,
    /// first link of the cables leaving level `l` upwards
    link_base: Vec<u64>,
    /// `stride[l][i]`: weight of digit `i` in the position of a node at level `l`
    stride: Vec<Vec<u64>>,
    n_hosts: usize,
}

impl PgftDmodk {
    /// Hosts are nodes `0..n_hosts` in position order, as `netsteer.topology.pgft`
    /// builds them; `out_channel` and `channel_dst` are only checked, not kept.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        levels: usize,
        down: Vec<u64>,
        up: Vec<u64>,
        par: Vec<u64>,
        labels: Vec<u32>,
        level: Vec<u8>,
        out_channel: Vec<i64>,
        n_slots: usize,
        channel_dst: Vec<i64>,
    ) -> Result<Self, String> {
        let n_nodes = level.len();
        if levels == 0 || down.len() != levels || up.len() != levels || par.len() != levels {
            return Err("down, up and parallel need one entry per level".into());
        }
        if labels.len() != n_nodes * levels || out_channel.len() != n_nodes * n_slots {
            return Err("labels or out_channel do not match the node count".into());
        }
        let radix = |l: usize, i: usize| if i < l { up[i] } else { down[i] };
        let stride: Vec<Vec<u64>> = (0..=levels)
            .map(|l| {
                let mut st = vec![1u64; levels];
                for i in 1..levels {
                    st[i] = st[i - 1] * radix(l, i - 1);
                }
                st
            })
            .collect();
        let count = |l: usize| (0..levels).map(|i| radix(l, i)).product::<u64>();
        let mut link_base = vec![0u64; levels + 1];
        for l in 0..levels {
            link_base[l + 1] = link_base[l] + count(l) * up[l] * par[l];
        }
        let n_hosts = count(0) as usize;
        let first: Vec<usize> = (0..=levels)
            .scan(0usize, |acc, l| {
                let f = *acc;
                *acc += count(l) as usize;
                Some(f)
            })
            .collect();
        if n_nodes != first[levels] + count(levels) as usize
            || channel_dst.len() as u64 != 2 * link_base[levels]
        {
            return Err("the topology is not the PGFT its parameters describe".into());
        }
        // every up port of every node must be the cable the arithmetic names
        for l in 0..levels {
            let below = if l > 0 { down[l - 1] * par[l - 1] } else { 0 };
            for pos in 0..count(l) as usize {
                let node = first[l] + pos;
                if level[node] as usize != l {
                    return Err(format!("node {node} is not at level {l}"));
                }
                for s in 0..up[l] * par[l] {
                    let (u, j) = (s % up[l], s / up[l]);
                    let port = (below + 1 + s) as usize;
                    let want = 2 * (link_base[l] + pos as u64 * up[l] * par[l] + u * par[l] + j);
                    let got = if port < n_slots {
                        out_channel[node * n_slots + port]
                    } else {
                        -1
                    };
                    if got != want as i64 {
                        return Err(format!(
                            "node {node} port {port}: channel {got}, the PGFT order says {want}"
                        ));
                    }
                    let parent = channel_dst[want as usize] as usize;
                    let lab = &labels[node * levels..(node + 1) * levels];
                    let plab = &labels[parent * levels..(parent + 1) * levels];
                    let same = (0..levels).all(|i| {
                        if i == l {
                            plab[i] as u64 == u
                        } else {
                            plab[i] == lab[i]
                        }
                    });
                    if !same {
                        return Err(format!("node {node} port {port} reaches the wrong parent"));
                    }
                }
            }
        }
        let mut cum = vec![1u64; levels + 1];
        for l in 0..levels {
            cum[l + 1] = cum[l] * up[l];
        }
        Ok(PgftDmodk {
            levels,
            down,
            up,
            par,
            cum,
            link_base,
            stride,
            n_hosts,
        })
    }

    fn pos(&self, l: usize, lab: &[u64]) -> u64 {
        lab.iter().zip(&self.stride[l]).map(|(d, s)| d * s).sum()
    }
}

impl Router for PgftDmodk {
    fn path(&self, src: usize, dst: usize, out: &mut Vec<u32>) -> Result<(), String> {
        if src >= self.n_hosts || dst >= self.n_hosts {
            return Err(format!("host {} does not exist", src.max(dst)));
        }
        if src == dst {
            return Ok(());
        }
        let n = self.levels;
        let p = dst as u64;
        let (mut lab, mut ld) = ([0u64; 16], [0u64; 16]);
        if n > 16 {
            return Err("more than 16 levels".into());
        }
        let (mut a, mut b) = (src as u64, p);
        for i in 0..n {
            lab[i] = a % self.down[i];
            ld[i] = b % self.down[i];
            a /= self.down[i];
            b /= self.down[i];
        }
        // the turning level: above the highest digit where they differ
        let turn = (0..n).rev().find(|&i| lab[i] != ld[i]).map_or(0, |i| i + 1);
        for l in 0..turn {
            let k = self.up[l] * self.par[l];
            let s = (p / self.cum[l]) % k;
            let (u, j) = (s % self.up[l], s / self.up[l]);
            let pos = self.pos(l, &lab[..n]);
            out.push((2 * (self.link_base[l] + pos * k + u * self.par[l] + j)) as u32);
            lab[l] = u;
        }
        for l in (1..=turn).rev() {
            let j = (p / self.cum[l]) % self.par[l - 1];
            let u = lab[l - 1];
            lab[l - 1] = ld[l - 1];
            let pos = self.pos(l - 1, &lab[..n]);
            let k = self.up[l - 1] * self.par[l - 1];
            out.push((2 * (self.link_base[l - 1] + pos * k + u * self.par[l - 1] + j) + 1) as u32);
        }
        Ok(())
    }
    fn n_hosts(&self) -> usize {
        self.n_hosts
    }
    fn bytes(&self) -> usize {
        (self.stride.len() * self.levels + 6 * self.levels) * 8
    }
}
