// Evaluation order and side effects (P4_16 8.1, 6.8): incr() and
// mark() change their inout argument; each statement below shows one rule.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f;
    bit<8> g; bit<8> i; bit<8> l; bit<8> m; bit<8> n; bit<8> q; bit<8> w;
    bit<8> t; bit<8> u; bit<8> v; bit<8> t2; bit<8> u2; bit<8> v2;
}
header s_t { bit<8> v; }
struct headers_t { h_t h; s_t[4] s; }
struct meta_t { }
struct pr_t { bit<8> x; bit<8> y; }

bit<8> incr(inout bit<8> x) {
    x = x + 1;
    return x;
}
bool mark(inout bit<8> x) {
    x = x + 1;
    return true;
}
bit<8> pair(in bit<8> x, in bit<8> y) {
    return (x << 4) | (y & 0x0f);
}

parser OParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); pk.extract(hdr.s[0]); pk.extract(hdr.s[1]); pk.extract(hdr.s[2]);
                  pk.extract(hdr.s[3]); transition accept; }
}
control OVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control OIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(4) rg;
    apply {
        // operands left to right: a is read before incr() changes it
        hdr.h.b = hdr.h.a + incr(hdr.h.a);
        // && short-circuits: mark(c) only when k == 1
        if (hdr.h.k == 1 && mark(hdr.h.c)) { hdr.h.d = 1; }
        // || short-circuits: mark(e) only when k != 2
        if (hdr.h.k == 2 || mark(hdr.h.e)) { hdr.h.d = hdr.h.d | 2; }
        // ?: evaluates only the chosen branch
        hdr.h.f = hdr.h.k == 3 ? incr(hdr.h.g) : incr(hdr.h.i);
        // an index computed by a call runs before the right-hand side
        hdr.s[incr(hdr.h.n)].v = hdr.h.n;
        // a plain index is read after the right-hand side's calls (p4c, BMv2)
        hdr.s[hdr.h.n].v = incr(hdr.h.n);
        // arguments left to right: x is l before incr() changes it (P4_16 6.8's f(a, g(a)))
        hdr.h.m = pair(hdr.h.l, incr(hdr.h.l));
        // extern method arguments too: the index is q before incr() changes it
        rg.write((bit<32>)hdr.h.q, incr(hdr.h.q));
        rg.read(hdr.h.w, 1);
        // initializer lists left to right: x is t before incr(t); named fields in the
        // order written (y's incr(t2) first, then x reads the new t2)
        pr_t pr = { hdr.h.t, incr(hdr.h.t) };
        hdr.h.u = pr.x;
        hdr.h.v = pr.y;
        pr_t pr2 = { y = incr(hdr.h.t2), x = hdr.h.t2 };
        hdr.h.u2 = pr2.x;
        hdr.h.v2 = pr2.y;
        sm.egress_spec = 2;
    }
}
control OEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control OCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control ODeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.s); } }
V1Switch(OParser(), OVerify(), OIngress(), OEgress(), OCompute(), ODeparser()) main;
