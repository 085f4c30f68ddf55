/* A struct field of tuple type holding a header stack (p4c's issue4057.p4): its
 * headers change in place through the tuple, and a tuple copied into a local is a
 * value of its own. */
#include <core.p4>
#include <v1model.p4>

header item_t { bit<8> b; }
header h_t { bit<8> v; bit<8> w; bit<8> x; }
struct headers_t { h_t h; }
struct arr_t { tuple<item_t[2], bit<8>> n; }
struct meta_t { arr_t s; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        meta.s.n[0][1].setValid();
        meta.s.n[0][1].b = hdr.h.v;
        tuple<item_t[2], bit<8>> t = meta.s.n;
        t[0][1].b = 9;
        hdr.h.w = meta.s.n[0][1].b;
        hdr.h.x = t[0][1].b;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
