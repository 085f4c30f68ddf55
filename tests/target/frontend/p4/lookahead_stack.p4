/* lookahead of a struct holding a header stack (p4c's issue2465-bmv2.p4): every
 * element of the looked-at stack is valid and filled from the packet's bits, which
 * stay in the packet for the extracts that follow. */
#include <core.p4>
#include <v1model.p4>

header item_t { bit<8> b; }
header tail_t { bit<8> x; }
struct peek_t { item_t[2] items; bit<8> after; }
struct headers_t { item_t[2] items; tail_t tail; }
struct meta_t { bit<8> first; bit<8> valid; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        peek_t l = pkt.lookahead<peek_t>();
        meta.first = l.items[0].b;
        meta.valid = l.items[1].isValid() ? 8w1 : 8w0;
        transition select(l.items[1].b, l.after) {
            (1, _): one;
            (_, 7): seven;
            default: accept;
        }
    }
    state one { pkt.extract(hdr.items.next); transition accept; }
    state seven {
        pkt.extract(hdr.items.next);
        pkt.extract(hdr.items.next);
        pkt.extract(hdr.tail);
        transition accept;
    }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.items[0].isValid()) { hdr.items[0].b = hdr.items[0].b + meta.valid; }
        if (hdr.tail.isValid()) { hdr.tail.x = meta.first; }
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
