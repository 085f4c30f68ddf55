/* Benchmark program for bench/target_veth.py: a small IPv6 router.
 * Parses Ethernet/IPv6/UDP; an exact table on the ingress port (port -> router MAC
 * check), an LPM table on the destination (-> port, next-hop MAC), MAC rewrite and
 * hop-limit decrement; a per-port counter. Valid P4_16 for p4c-bm2-ss (v1model). */
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
    bit<48> port_mac;
}

parser RParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
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

control RVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RIngress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) rx_port;

    action drop() {
        mark_to_drop(sm);
    }
    action set_port_mac(bit<48> mac) {
        meta.port_mac = mac;
    }
    table port_mac {
        key = { sm.ingress_port: exact; }
        actions = { set_port_mac; drop; }
        default_action = drop();
    }
    action route(bit<9> port, bit<48> next_hop) {
        sm.egress_spec = port;
        hdr.ethernet.src_addr = meta.port_mac;
        hdr.ethernet.dst_addr = next_hop;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }
    table routes {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { route; drop; }
        default_action = drop();
        size = 4096;
    }
    apply {
        rx_port.count((bit<32>)sm.ingress_port);
        if (!hdr.ipv6.isValid() || hdr.ipv6.hop_limit <= 1) {
            drop();
        } else if (port_mac.apply().hit) {
            routes.apply();
        }
    }
}

control REgress(inout headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    apply { }
}

control RCompute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
    }
}

V1Switch(RParser(), RVerify(), RIngress(), REgress(), RCompute(), RDeparser()) main;
