//! Walking destination-based forwarding tables into channel paths.
//!
//! The common case -- destination tables, ECMP groups resolved by the stated hash, no
//! class override, no circuit on the way -- walked in Rust, one flow at a time.
//! Anything else (or any failure) is left to the caller's general walk, which also
//! words the errors.

/// Which fields the ECMP hash mixes (`netsteer.routing.table.flow_hash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcmpHash {
    Dst,
    SrcDst,
    Flow,
}

/// MurmurHash3's 32-bit finaliser.
#[inline]
pub fn fmix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 13;
    x = x.wrapping_mul(0xC2B2_AE35);
    x ^ (x >> 16)
}

/// `F(F(F(F(node) ^ s) ^ d) ^ f)`, with `s` 0 unless the mode mixes the source and
/// `f` 0 unless it mixes the flow: the Python `flow_hash`, bit for bit (every field
/// taken modulo 2^32).
#[inline]
pub fn flow_hash(node: u32, src: u32, dst: u32, flow: u32, mode: EcmpHash) -> u32 {
    let s = if mode == EcmpHash::Dst { 0 } else { src };
    let f = if mode == EcmpHash::Flow { flow } else { 0 };
    fmix32(fmix32(fmix32(fmix32(node) ^ s) ^ dst) ^ f)
}

/// ECMP groups as CSR: group `g`'s ports are `ports[ptr[g]..ptr[g + 1]]`.
#[derive(Clone, Copy)]
pub struct Groups<'a> {
    pub ptr: &'a [i64],
    pub ports: &'a [i32],
    pub hash: EcmpHash,
}

impl Groups<'_> {
    pub const NONE: Groups<'static> = Groups {
        ptr: &[0],
        ports: &[],
        hash: EcmpHash::Dst,
    };

    /// The member of group `g` a flow takes at `node`; None for a group that does
    /// not exist (or is empty).
    #[inline]
    fn pick(&self, g: usize, node: usize, flow: &Flow) -> Option<i64> {
        let (a, b) = (*self.ptr.get(g)?, *self.ptr.get(g + 1)?);
        if b <= a {
            return None;
        }
        let h = flow_hash(
            node as u32,
            flow.src as u32,
            flow.dst as u32,
            flow.id as u32,
            self.hash,
        );
        self.ports
            .get(a as usize + (h as u64 % (b - a) as u64) as usize)
            .map(|&p| p as i64)
    }
}

/// What the ECMP hash sees of a flow: source and destination host indices, flow id.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    pub src: usize,
    pub dst: usize,
    pub id: u64,
}

/// Forwarding state, row-major. Tables are compact: only some nodes have a row.
pub struct Tables<'a> {
    /// `table[row * n_hosts + dst]`: out-port, -1 for none, <= -2 for an ECMP group.
    pub table: &'a [i32],
    /// `row_of[node]`: the node's row in `table`, -1 for none (every entry -1).
    pub row_of: &'a [i64],
    pub n_hosts: usize,
    /// A host's way out when its row has no entry: its lowest connected port.
    pub host_port: &'a [i64],
    /// `out_channel[node * n_slots + port]`: channel leaving by that port, -1 if none.
    pub out_channel: &'a [i64],
    pub n_slots: usize,
    pub channel_dst: &'a [i64],
    pub is_host: &'a [bool],
    /// Nodes the fast walk does not handle (circuit switches: they forward by in-port).
    pub give_up: &'a [bool],
    /// Hops after which a walk is taken to loop.
    pub limit: usize,
    pub groups: Groups<'a>,
}

/// The flows to walk: from node `src_node[i]` (host index `src[i]`) to host index
/// `dst[i]` (node `dst_node[i]`), flow id `id[i]` for the ECMP hash.
pub struct Walks<'a> {
    pub src_node: &'a [i64],
    pub src: &'a [i64],
    pub dst: &'a [i64],
    pub dst_node: &'a [i64],
    pub id: &'a [i64],
}

/// Paths of `flows`, as CSR. `Err(i)` names the first flow the fast walk cannot
/// resolve.
pub fn walk(t: &Tables, flows: &Walks) -> Result<(Vec<usize>, Vec<u32>), usize> {
    let n = flows.src_node.len();
    let mut offsets = Vec::with_capacity(n + 1);
    let mut channels = Vec::with_capacity(n * 4);
    offsets.push(0);
    for i in 0..n {
        let flow = Flow {
            src: flows.src[i] as usize,
            dst: flows.dst[i] as usize,
            id: flows.id[i] as u64,
        };
        if !walk_one(
            t,
            flows.src_node[i],
            &flow,
            flows.dst_node[i],
            &mut channels,
        ) {
            return Err(i);
        }
        offsets.push(channels.len());
    }
    Ok((offsets, channels))
}

/// Append the path of `flow` from node `src` to its destination (node `target`) to
/// `out`; false (with `out` partly extended) when the fast walk cannot resolve it.
pub fn walk_one(t: &Tables, src: i64, flow: &Flow, target: i64, out: &mut Vec<u32>) -> bool {
    let d = flow.dst;
    let mut cur = src;
    let mut hops = 0;
    while cur != target {
        if hops >= t.limit {
            return false;
        }
        let node = cur as usize;
        if t.give_up[node] {
            return false;
        }
        let row = t.row_of[node];
        let mut port = if row >= 0 {
            t.table[row as usize * t.n_hosts + d] as i64
        } else {
            -1
        };
        if port <= -2 {
            match t.groups.pick((-2 - port) as usize, node, flow) {
                Some(p) => port = p,
                None => return false,
            }
        } else if port == -1 && t.is_host[node] {
            port = t.host_port[node];
        }
        if port < 0 || port as usize >= t.n_slots {
            return false;
        }
        let ch = t.out_channel[node * t.n_slots + port as usize];
        if ch < 0 {
            return false;
        }
        out.push(ch as u32);
        let next = t.channel_dst[ch as usize];
        if next != target && t.is_host[next as usize] {
            return false; // delivered to the wrong host
        }
        cur = next;
        hops += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_pythons_flow_hash() {
        // values of netsteer.routing.table.flow_hash
        assert_eq!(flow_hash(5, 1, 2, 0, EcmpHash::Dst), 45_224_582);
        assert_eq!(flow_hash(5, 9, 2, 7, EcmpHash::Dst), 45_224_582);
        assert_eq!(flow_hash(5, 1, 2, 0, EcmpHash::SrcDst), 1_016_030_442);
        let id = (1u64 << 40) + 9; // flow ids are taken modulo 2^32
        assert_eq!(
            flow_hash(70_000, 123, 4567, id as u32, EcmpHash::Flow),
            58_057_267
        );
        assert_eq!(flow_hash(0, 0, 0, 0, EcmpHash::Flow), 0);
    }

    #[test]
    fn walks_a_two_switch_line() {
        // h0 -[c0/c1]- s2 -[c2/c3]- s3 -[c4/c5]- h1; nodes 0,1 hosts, 2,3 switches
        // ports: h0:1->s2, s2:1->h0, s2:2->s3, s3:1->s2, s3:2->h1, h1:1->s3
        let n_slots = 3;
        let mut out = vec![-1i64; 4 * n_slots];
        out[0 * n_slots + 1] = 0; // h0 port 1 -> c0 (to s2)
        out[2 * n_slots + 1] = 1; // s2 port 1 -> c1 (to h0)
        out[2 * n_slots + 2] = 2; // s2 port 2 -> c2 (to s3)
        out[3 * n_slots + 1] = 3; // s3 port 1 -> c3 (to s2)
        out[3 * n_slots + 2] = 4; // s3 port 2 -> c4 (to h1)
        out[1 * n_slots + 1] = 5; // h1 port 1 -> c5 (to s3)
        let channel_dst = [2, 0, 3, 2, 1, 3];
        // rows for the switches only (hosts use their port), columns per host index
        let table = [1, 2, 1, 2];
        let row_of = [-1, -1, 0, 1];
        let t = Tables {
            table: &table,
            row_of: &row_of,
            n_hosts: 2,
            host_port: &[1, 1, 1, 1],
            out_channel: &out,
            n_slots,
            channel_dst: &channel_dst,
            is_host: &[true, true, false, false],
            give_up: &[false; 4],
            limit: 8,
            groups: Groups::NONE,
        };
        let flows = |src_node: &'static [i64], dst: &'static [i64]| Walks {
            src_node,
            src: src_node, // hosts 0 and 1 are nodes 0 and 1
            dst,
            dst_node: dst,
            id: &[0, 0, 0],
        };
        let (off, ch) = walk(&t, &flows(&[0, 1, 0], &[1, 0, 0])).unwrap();
        assert_eq!(off, vec![0, 3, 6, 6]);
        assert_eq!(ch, vec![0, 2, 4, 5, 3, 1]);
        // a missing entry is refused, naming the flow
        let table_missing = [1, -1, 1, 2];
        let t2 = Tables {
            table: &table_missing,
            ..t
        };
        assert_eq!(walk(&t2, &flows(&[0, 0], &[0, 1])).unwrap_err(), 1);
        // a node it must not forward through (a circuit switch) is handed back
        let t3 = Tables {
            give_up: &[false, false, false, true],
            ..t
        };
        assert_eq!(walk(&t3, &flows(&[1, 0], &[1, 1])).unwrap_err(), 1);
    }
}
