// exit in an action with out/inout parameters (P4_16 12.5): the
// call's copy-out happens, then the control exits (also from a nested call).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }

parser XParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control XVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control XIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set_and_exit(inout bit<8> x, out bit<8> y) {
        x = x + 1;
        y = 0x5a;
        exit;
    }
    action outer(inout bit<8> z) {
        z = z ^ 0xf0;
        set_and_exit(z, hdr.h.c);
        z = 0;  // not reached
    }
    apply {
        sm.egress_spec = 2;
        if (hdr.h.k == 1) {
            set_and_exit(hdr.h.a, hdr.h.b);
        } else if (hdr.h.k == 2) {
            outer(hdr.h.a);
        }
        hdr.h.d = 0xee;  // reached only when nothing exited
    }
}
control XEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control XCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control XDeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(XParser(), XVerify(), XIngress(), XEgress(), XCompute(), XDeparser()) main;
