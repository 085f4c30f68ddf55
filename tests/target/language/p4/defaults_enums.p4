// An action parameter with a default value and serializable enum values used as their
// underlying bit<W> type (the parameters of controls and parsers: direct_apply.p4).
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind { A = 1, B = 2 }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header data_t { bit<8> a; bit<8> b; bit<8> c; bit<8> m; }
struct headers_t { ethernet_t eth; data_t d; }
struct meta_t { bit<8> m; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        meta.m = 5;
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action sum(bit<8> v, bit<8> w = 7) { hdr.d.b = v + w; }
    apply {
        sm.egress_spec = 2;
        hdr.d.a = hdr.d.a + 3;
        sum(0x42);
        hdr.d.c = Kind.B;
        hdr.d.c = hdr.d.c | Kind.A;
        if (hdr.d.c == Kind.B) { hdr.d.c = 0xff; }
        hdr.d.m = meta.m;
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
