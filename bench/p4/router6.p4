/*
 * router6.p4: the benchmark pipeline of bench/target_api.py. A plain IPv6
 * router: parse Ethernet/IPv6/UDP, exact lookups (my MAC per ingress port, host
 * routes, source MAC per egress port), one LPM route lookup, hop-limit decrement
 * and Ethernet rewrite, deparse. host_routes (exact on the destination) also
 * serves the memory figure with 100,000 entries. Only P4_16 core and v1model constructs.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
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
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t eth;
    ipv6_t     ipv6;
    udp_t      udp;
}

struct meta_t {
    bit<1> routable;
}

parser RParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
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

control RVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control RIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(512, CounterType.packets_and_bytes) rx_port;

    action drop() {
        mark_to_drop(sm);
    }
    action accept_frame() {
        meta.routable = 1;
    }
    table my_mac {
        key = { sm.ingress_port : exact; hdr.eth.dst : exact; }
        actions = { accept_frame; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    action route(bit<9> port, bit<48> next_mac) {
        sm.egress_spec = port;
        hdr.eth.dst = next_mac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }
    table host_routes {
        key = { hdr.ipv6.dst_addr : exact; }
        actions = { route; NoAction; }
        default_action = NoAction();
        size = 131072;
    }
    table routes {
        key = { hdr.ipv6.dst_addr : lpm; }
        actions = { route; drop; }
        default_action = drop();
        size = 131072;
    }
    apply {
        rx_port.count((bit<32>)sm.ingress_port);
        if (!hdr.ipv6.isValid() || hdr.ipv6.hop_limit <= 1) {
            drop();
            return;
        }
        my_mac.apply();
        if (meta.routable == 1) {
            if (!host_routes.apply().hit) {
                routes.apply();
            }
        } else {
            drop();
        }
    }
}

control REgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_src(bit<48> mac) {
        hdr.eth.src = mac;
    }
    table port_mac {
        key = { sm.egress_port : exact; }
        actions = { set_src; NoAction; }
        default_action = NoAction();
        size = 512;
    }
    apply {
        port_mac.apply();
    }
}

control RCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control RDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
    }
}

V1Switch(RParser(), RVerify(), RIngress(), REgress(), RCompute(), RDeparser()) main;
