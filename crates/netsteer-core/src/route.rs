//! Routers: the path of one message between two hosts, resolved inside the engine.
//!
//! A streamed MPI job asks for a path per message as it is sent, so paths never
//! cross into Python. [`TableRouter`] walks plain destination tables (the compact
//! rows of `netsteer.routing.Routing`); [`PgftDmodk`] computes D-mod-K on a PGFT in
//! closed form, so trees of tens of thousands of hosts need no tables at all.

use crate::paths::{walk_one, Tables};

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
        })
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
        if walk_one(&self.view(), s, dst, t, out) {
            Ok(())
        } else {
            out.truncate(mark);
            Err(format!(
                "no plain route from host {src} to host {dst} (missing entry, loop, \
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
    }
}

/// D-mod-K on a PGFT (`netsteer.routing.dmodk`), computed per hop from the labels:
/// no table. Going up towards host position `p`, a node at level `l` takes port
/// `below + 1 + (p / prod(up[..l])) mod (up[l] * parallel[l])`; a switch whose label
/// digits `>= l` are the destination's turns down, on port
/// `1 + label_dst[l-1] + j * down[l-1]`, `j = (p / prod(up[..l])) mod parallel[l-1]`.
pub struct PgftDmodk {
    levels: usize,
    down: Vec<u64>,
    up: Vec<u64>,
    par: Vec<u64>,
    cum: Vec<u64>,
    /// `labels[node * levels + i]`
    labels: Vec<u32>,
    level: Vec<u8>,
    /// a switch's label digits `>= its level`, as one number (its subtree)
    sub_key: Vec<u64>,
    /// the same number of a host's digits `>= l`, at `host_key[host * levels + l]`
    host_key: Vec<u64>,
    out_channel: Vec<i64>,
    n_slots: usize,
    channel_dst: Vec<i64>,
    n_hosts: usize,
}

impl PgftDmodk {
    /// Hosts are nodes `0..n_hosts` in position order, as `netsteer.topology.pgft` builds them.
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
        if level.iter().any(|&l| l as usize > levels)
            || out_channel.iter().any(|&c| c >= channel_dst.len() as i64)
            || channel_dst.iter().any(|&n| n < 0 || n as usize >= n_nodes)
        {
            return Err("levels, channels or nodes out of range".into());
        }
        let n_hosts = level.iter().take_while(|&&l| l == 0).count();
        // digit i counts to down[i] above the node's level: mixed radix over those
        let key = |node: usize, from: usize| -> u64 {
            let mut k = 0u64;
            for i in (from..levels).rev() {
                k = k * down[i] + labels[node * levels + i] as u64;
            }
            k
        };
        let sub_key: Vec<u64> = (0..n_nodes)
            .map(|v| key(v, (level[v] as usize).min(levels)))
            .collect();
        let host_key: Vec<u64> = (0..n_hosts)
            .flat_map(|h| (0..levels).map(move |l| (h, l)))
            .map(|(h, l)| key(h, l))
            .collect();
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
            labels,
            level,
            sub_key,
            host_key,
            out_channel,
            n_slots,
            channel_dst,
            n_hosts,
        })
    }

    fn label(&self, node: usize) -> &[u32] {
        &self.labels[node * self.levels..(node + 1) * self.levels]
    }
}

impl Router for PgftDmodk {
    fn path(&self, src: usize, dst: usize, out: &mut Vec<u32>) -> Result<(), String> {
        if src >= self.n_hosts || dst >= self.n_hosts {
            return Err(format!("host {} does not exist", src.max(dst)));
        }
        let p = dst as u64;
        let ld = self.label(dst);
        let mut node = src;
        let mut hops = 0;
        while node != dst {
            let lv = self.level[node] as usize;
            let port = if lv == 0 {
                1 + p % (self.up[0] * self.par[0])
            } else if lv == self.levels
                || self.sub_key[node] == self.host_key[dst * self.levels + lv]
            {
                let j = (p / self.cum[lv]) % self.par[lv - 1];
                1 + ld[lv - 1] as u64 + j * self.down[lv - 1]
            } else {
                let below = self.down[lv - 1] * self.par[lv - 1];
                below + 1 + (p / self.cum[lv]) % (self.up[lv] * self.par[lv])
            } as usize;
            let ch = if port < self.n_slots {
                self.out_channel[node * self.n_slots + port]
            } else {
                -1
            };
            if ch < 0 || hops > 2 * self.levels {
                return Err(format!("no D-mod-K route from host {src} to host {dst}"));
            }
            out.push(ch as u32);
            node = self.channel_dst[ch as usize] as usize;
            hops += 1;
        }
        Ok(())
    }
    fn n_hosts(&self) -> usize {
        self.n_hosts
    }
    fn bytes(&self) -> usize {
        self.labels.len() * 4
            + self.level.len()
            + (self.out_channel.len() + self.channel_dst.len()) * 8
    }
}
