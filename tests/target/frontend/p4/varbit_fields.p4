/* A varbit field in a metadata struct (p4c's issue1291-bmv2.p4) and varbit
 * variables swapping two fields (issue447-5-bmv2.p4): a varbit value assigned takes
 * its current width along. */
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> n1; bit<8> n2; }
header opt_t { varbit<32> data; }
header copy_t { bit<8> tag; varbit<32> data; }
struct headers_t { len_t len; opt_t a; opt_t b; copy_t cp; }
struct meta_t { varbit<32> keep; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.a, (bit<32>)hdr.len.n1 << 3);
        pkt.extract(hdr.b, (bit<32>)hdr.len.n2 << 3);
        transition accept;
    }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    varbit<32> held;
    apply {
        sm.egress_spec = 1;
        meta.keep = hdr.a.data;
        hdr.cp.setValid();
        hdr.cp.tag = 0xee;
        hdr.cp.data = meta.keep;
        held = hdr.a.data;
        hdr.a.data = hdr.b.data;
        varbit<32> t = held;
        hdr.b.data = t;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.len); pkt.emit(hdr.a); pkt.emit(hdr.b); pkt.emit(hdr.cp); }
}

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
