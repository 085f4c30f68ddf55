// Parser value sets: select cases the control plane fills.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_t { bit<8> v; }
struct headers_t { ethernet_t eth; tag_t tag; }
struct meta_t { bit<8> path; }
struct key_t {
    @match(ternary) bit<16> ether_type;
    @match(range)   bit<8>  src_low;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tagged;
    value_set<key_t>(2) special;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { tagged: tag; default: rest; }
    }
    state rest {
        transition select(hdr.eth.ether_type, hdr.eth.src[7:0]) { special: tag2; default: accept; }
    }
    state tag { pkt.extract(hdr.tag); meta.path = 1; transition accept; }
    state tag2 { pkt.extract(hdr.tag); meta.path = 2; transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (hdr.tag.isValid()) { hdr.tag.v = meta.path; }
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.tag); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
