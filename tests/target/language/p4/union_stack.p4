// A stack of header unions (u_t[3]): extract(s.next.member) advances nextIndex as
// for a header stack, emit of the stack emits each element's valid member in order.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header a_t { bit<8> tag; bit<8> x; }
header b_t { bit<8> tag; bit<16> y; }
header_union u_t { a_t a; b_t b; }
header cnt_t { bit<8> n; }
struct headers_t { ethernet_t eth; cnt_t c; u_t[3] us; }
struct metadata_t { bit<8> n; }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition elem;
    }
    state elem {
        transition select(pkt.lookahead<bit<8>>()) { 0xaa: ea; 0xbb: eb; default: accept; }
    }
    state ea {
        pkt.extract(hdr.us.next.a);
        meta.n = meta.n + 1;
        transition elem;
    }
    state eb {
        pkt.extract(hdr.us.next.b);
        meta.n = meta.n + 1;
        transition elem;
    }
}

control MyVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.eth.ether_type = 0xbad2;
        }
        hdr.c.setValid();
        hdr.c.n = meta.n;
        if (hdr.us[1].b.isValid()) {
            hdr.us[1].b.y = hdr.us[1].b.y + 1;
        }
        if (hdr.us[0].a.isValid() && hdr.us[0].a.x == 0xff) {
            hdr.us[0].a.setInvalid();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.c);
        pkt.emit(hdr.us);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
