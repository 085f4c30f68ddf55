// == and != on headers, header unions, header stacks and structs (P4_16 8.17-8.19):
// equal when both invalid, or both valid with equal fields; unions by their valid
// member; stacks element by element. Each comparison sets one bit of hdr.d.r.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header data_t { bit<8> v1x; bit<8> v1y; bit<8> v2x; bit<8> v2y; bit<8> r; bit<8> r2; }
header a_t { bit<8> x; bit<8> y; }
header b_t { bit<8> x; bit<8> y; }
header_union u_t { a_t a; b_t b; }
struct pair_t { a_t h; bit<8> tag; }
struct headers_t { ethernet_t eth; data_t d; }
struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        bit<8> r = 0;
        a_t p;
        a_t q;
        if (p == q) {
            r = r | 1;
        }
        p.setValid();
        p.x = hdr.d.v1x;
        p.y = hdr.d.v1y;
        if (p != q) {
            r = r | 2;
        }
        q.setValid();
        q.x = hdr.d.v2x;
        q.y = hdr.d.v2y;
        if (p == q) {
            r = r | 4;
        }
        u_t u1;
        u_t u2;
        if (u1 == u2) {
            r = r | 8;
        }
        u1.a.setValid();
        u1.a.x = hdr.d.v1x;
        u1.a.y = hdr.d.v1y;
        u2.b.setValid();
        u2.b.x = hdr.d.v1x;
        u2.b.y = hdr.d.v1y;
        if (u1 != u2) {
            r = r | 16;
        }
        u2.a.setValid();
        u2.a.x = hdr.d.v1x;
        u2.a.y = hdr.d.v1y;
        if (u1 == u2) {
            r = r | 32;
        }
        a_t[2] s1;
        a_t[2] s2;
        s1[0] = p;
        s2[0] = q;
        if (s1 == s2) {
            r = r | 64;
        }
        s1[1].setValid();
        if (s1 != s2) {
            r = r | 128;
        }
        hdr.d.r = r;
        pair_t m1 = { p, 7 };
        pair_t m2 = { q, 7 };
        hdr.d.r2 = (m1 == m2) ? 8w1 : 8w0;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
