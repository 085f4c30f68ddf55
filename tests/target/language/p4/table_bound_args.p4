// Table action lists that bind directional arguments (P4_16
// 14.2.1.2): the bound expressions are evaluated when the action runs (after g was
// incremented), out/inout ones copied out after it; directionless parameters come
// from the entry, the default action or the control plane.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> f; bit<8> g; bit<8> r; bit<8> k2; }
struct headers_t { h_t h; }
struct meta_t { }

parser BParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control BVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control BIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action add_to(inout bit<8> x, bit<8> d) { x += d; }  // (a compound assignment, on the fast path too)
    action copy_in(in bit<8> v, out bit<8> o) { o = v; }
    action set_r(bit<8> v) { hdr.h.r = v; }
    table t {
        key = { hdr.h.k : exact; }
        actions = { add_to(hdr.h.f); copy_in(hdr.h.g, hdr.h.r); set_r; }
        default_action = add_to(hdr.h.f, 0x10);
        const entries = {
            1 : add_to(hdr.h.f, 5);
            2 : copy_in(hdr.h.g, hdr.h.r);
            3 : set_r(0x77);
        }
    }
    table u {
        key = { hdr.h.k2 : exact; }
        actions = { add_to(hdr.h.g); NoAction; }
        default_action = NoAction();
    }
    apply {
        hdr.h.g = hdr.h.g + 1;
        t.apply();
        u.apply();
        sm.egress_spec = 2;
    }
}
control BEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control BCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control BDeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(BParser(), BVerify(), BIngress(), BEgress(), BCompute(), BDeparser()) main;
