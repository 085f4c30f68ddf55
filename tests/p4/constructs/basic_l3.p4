/* A typical v1model router: Ethernet/IPv6/UDP parser with select, exact and LPM
 * tables, actions with parameters, header rewrites, deparser. */
#include <core.p4>
#include <v1model.p4>
#include "inc/l3_headers.p4"

struct headers_t {
    ethernet_t ethernet;
    ipv6_t     ipv6;
    udp_t      udp;
}

struct metadata_t {
    bit<9> out_port;
    bool   routed;
}

parser MyParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_port(bit<9> port) {
        meta.out_port = port;
    }
    action route(bit<9> port, mac_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
        meta.routed = true;
    }
    table my_mac {
        key = { hdr.ethernet.dst_addr: exact; }
        actions = { NoAction; set_port; }
        size = 16;
    }
    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { route; drop; }
        default_action = drop();
        size = 4096;
    }
    @name("set_src") action set_src_mac(mac_t smac) {
        hdr.ethernet.src_addr = smac;
    }
    @name("port_rewrite")
    table smac {
        key = { standard_metadata.egress_spec: exact @name("port"); }
        actions = { set_src_mac; @defaultonly NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.ipv6.isValid() && hdr.ipv6.hop_limit > 1) {
            my_mac.apply();
            ipv6_lpm.apply();
            smac.apply();
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
