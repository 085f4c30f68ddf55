// Direct invocation of control and parser types: T.apply(args) with no instance declared;
// parameters with default values, a parser without packet_in.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header data_t { bit<8> a; bit<8> b; bit<8> q; }
struct headers_t { ethernet_t eth; data_t d; }
struct meta_t { }

parser DataParser(packet_in pkt, out data_t d) {
    state start { pkt.extract(d); transition accept; }
}

parser Quarter(out bit<8> x, in bit<8> y = 20) {
    state start { x = y >> 2; transition accept; }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x1234: data; default: accept; }
    }
    state data {
        DataParser.apply(pkt, hdr.d);
        Quarter.apply(hdr.d.q);
        transition accept;
    }
}

control AddOne(inout bit<8> x, in bit<8> n = 1) { apply { x = x + n; } }

control Lookup(inout bit<8> x) {
    action set(bit<8> v) { x = v; }
    table t { key = { x: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (hdr.d.isValid()) {
            AddOne.apply(hdr.d.a);
            AddOne.apply(hdr.d.a);
            Lookup.apply(hdr.d.b);
        }
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
