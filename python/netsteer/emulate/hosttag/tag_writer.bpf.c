/* netsteer host tagging, packet side: a tc sched_cls program on a host's fabric
 * egress that writes the UnisonFlow tag into each IPv4 packet's destination MAC.
 *
 * tag_base[0]: the tag without its destination rank (primitive, U/L bit, job,
 *              communicator, source rank; netsteer.unisonflow.tags), 0 = untagged.
 *              Written by the PMPI library at each change of primitive.
 * ip_rank:     destination IPv4 (network order) -> destination rank.
 * Packets to an address not in ip_rank, or while tag_base is 0, pass unchanged. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
    __uint(pinning, LIBBPF_PIN_BY_NAME);
} tag_base SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, __u32);
    __type(value, __u32);
    __uint(pinning, LIBBPF_PIN_BY_NAME);
} ip_rank SEC(".maps");

SEC("tc")
int write_tag(struct __sk_buff *skb)
{
    void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + sizeof(*eth);
    if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
        return TC_ACT_OK;
    __u32 zero = 0, daddr = ip->daddr;
    __u64 *base = bpf_map_lookup_elem(&tag_base, &zero);
    __u32 *rank = bpf_map_lookup_elem(&ip_rank, &daddr);
    if (!base || !*base || !rank)
        return TC_ACT_OK;
    __u64 tag = *base | (*rank & 0x7fff);
    __u8 mac[6];
    for (int i = 0; i < 6; i++)
        mac[i] = (tag >> (40 - 8 * i)) & 0xff;
    bpf_skb_store_bytes(skb, 0, mac, 6, 0);
    return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
