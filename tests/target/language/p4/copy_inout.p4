// Copy-in/copy-out of composite inout arguments (P4_16 6.8): each
// action writes the original through its global name while it holds the copy; the
// copy-out then overwrites that write, as the spec says.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header s_t { bit<8> v; }
header o_t { bit<8> x; bit<8> y; }
struct pair_t { bit<8> x; bit<8> y; }
header_union u_t { s_t x; o_t y; }
struct headers_t { h_t h; h_t g; s_t[2] s; u_t u; o_t o; }
struct meta_t { pair_t p; }

parser QParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); pk.extract(hdr.g); pk.extract(hdr.s[0]); pk.extract(hdr.s[1]);
                  pk.extract(hdr.u.x); transition accept; }
}
control QVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control QIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action header_copy(inout h_t x) { hdr.h.a = 0x11; x.b = 0x22; }
    action struct_copy(inout pair_t q) { m.p.x = 0x33; q.y = 0x44; }
    action stack_copy(inout s_t[2] t) { hdr.s[0].v = 0x55; t[1].v = 0x66; }
    action invalidate(inout h_t x) { hdr.g.a = 0x77; x.setInvalid(); }
    action union_copy(inout u_t w) { hdr.u.x.v = 0x88; w.x.v = w.x.v + 1; }
    apply {
        m.p.x = 1;
        m.p.y = 2;
        header_copy(hdr.h);
        struct_copy(m.p);
        stack_copy(hdr.s);
        invalidate(hdr.g);
        union_copy(hdr.u);
        hdr.o.setValid();
        hdr.o.x = m.p.x;
        hdr.o.y = m.p.y;
        sm.egress_spec = 2;
    }
}
control QEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control QCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control QDeparser(packet_out pk, in headers_t hdr) {
    apply { pk.emit(hdr.h); pk.emit(hdr.g); pk.emit(hdr.s); pk.emit(hdr.u); pk.emit(hdr.o); }
}
V1Switch(QParser(), QVerify(), QIngress(), QEgress(), QCompute(), QDeparser()) main;
