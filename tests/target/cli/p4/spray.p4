/* Test program for the Device on veths: an action selector over output ports whose
 * members watch their port, keyed per flow label; plus a table sending a marked
 * ether type to the CPU port. Valid P4_16 for p4c-bm2-ss (v1model). */
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

struct headers_t {
    ethernet_t ethernet;
    ipv6_t     ipv6;
}

struct metadata_t { }

parser SParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
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
        transition accept;
    }
}

control SVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SIngress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w1024, 32w14) paths;

    action drop() {
        mark_to_drop(sm);
    }
    action fwd(bit<9> port) {
        sm.egress_spec = port;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
    }
    table spray {
        key = {
            sm.ingress_port: exact;
            hdr.ipv6.flow_label: selector;
        }
        actions = { fwd; drop; }
        implementation = paths;
        default_action = drop();
        size = 64;
    }
    action to_cpu(bit<9> port) {
        sm.egress_spec = port;
    }
    table punt {
        key = { hdr.ethernet.ether_type: exact; }
        actions = { to_cpu; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.ipv6.isValid()) {
            spray.apply();
        } else {
            if (!punt.apply().hit) {
                drop();
            }
        }
    }
}

control SEgress(inout headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    apply { }
}

control SCompute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv6);
    }
}

V1Switch(SParser(), SVerify(), SIngress(), SEgress(), SCompute(), SDeparser()) main;
