// Control-local initializers with calls: `w` is initialised by a
// function that also increments its inout argument, every time the control runs.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> p; }
struct headers_t { h_t h; }
struct meta_t { bit<8> seen; }

bit<8> bump_twice(inout bit<8> x) {
    x = x + 1;
    return x * 2;
}

parser LParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> pl = bump_twice(m.seen);      // parser local too: seen := 1; pl := 2
    state start { pk.extract(hdr.h); m.seen = m.seen + pl; transition accept; }
}
control LVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control LIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> w = bump_twice(hdr.h.a);      // a := a + 1; w := 2 * (a + 1)
    bit<8> v = w + bump_twice(hdr.h.c);  // c := c + 1; v := w + 2 * (c + 1)
    apply {
        hdr.h.b = w;
        hdr.h.c = hdr.h.c ^ v;
        hdr.h.p = m.seen;  // 1 + 2
        sm.egress_spec = 2;
    }
}
control LEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control LCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control LDeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(LParser(), LVerify(), LIngress(), LEgress(), LCompute(), LDeparser()) main;
