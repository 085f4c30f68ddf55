/* STF test program: IPv6 LPM forwarding, a ternary ACL with priorities, an indexed
 * and a direct counter, a register. Valid P4_16 for p4c-bm2-ss (v1model). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   traffic_class;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv6_t     ipv6;
    udp_t      udp;
}

struct metadata_t {
    bit<1> acl_hit;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x86dd: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) port_in;
    direct_counter(CounterType.packets) acl_hits;
    register<bit<16>>(4) last_dport;

    action drop() {
        mark_to_drop(sm);
    }
    action route(bit<9> port, bit<48> dmac) {
        sm.egress_spec = port;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }
    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { route; drop; }
        default_action = drop();
    }

    action permit() {
        meta.acl_hit = 1;
    }
    action deny() {
        meta.acl_hit = 1;
        mark_to_drop(sm);
    }
    action allow() {
        meta.acl_hit = 0;
    }
    table acl {
        key = {
            hdr.udp.dst_port: ternary;
            hdr.ipv6.src_addr: ternary;
        }
        actions = { permit; deny; allow; }
        default_action = allow();
        counters = acl_hits;
    }

    apply {
        port_in.count((bit<32>)sm.ingress_port);
        if (hdr.ipv6.isValid()) {
            ipv6_lpm.apply();
            if (hdr.udp.isValid()) {
                acl.apply();
                last_dport.write((bit<32>)sm.ingress_port, hdr.udp.dst_port);
            }
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
