// Compound assignments: every operator once, on header fields,
// and a left-hand side whose stack index is computed by a call with a side effect:
// it is evaluated once (take() runs once, the same element is read and written).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; bit<8> h;
    bit<8> i; bit<8> j; bit<8> k; bit<8> l; bit<8> m; int<8> sa; bit<8> n;
}
header s_t { bit<8> v; }
struct headers_t { h_t h; s_t[2] s; }
struct meta_t { }

bit<8> take(inout bit<8> n) {
    n = n + 1;
    return n - 1;
}

parser CParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); pk.extract(hdr.s[0]); pk.extract(hdr.s[1]); transition accept; }
}
control CVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control CIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a += hdr.h.b;
        hdr.h.c -= hdr.h.b;
        hdr.h.d *= 3;
        hdr.h.e &= 0x0f;
        hdr.h.f |= 0x80;
        hdr.h.g ^= 0xff;
        hdr.h.h <<= 2;
        hdr.h.i >>= 3;
        hdr.h.j |+|= hdr.h.b;
        hdr.h.k |-|= hdr.h.b;
        hdr.h.l /= 7;
        hdr.h.m %= 7;
        hdr.h.sa |-|= 100;
        hdr.s[take(hdr.h.n)].v += 5;
        sm.egress_spec = 2;
    }
}
control CEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control CDeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.s); } }
V1Switch(CParser(), CVerify(), CIngress(), CEgress(), CCompute(), CDeparser()) main;
