/* Constructs of p4c's samples the target runs: a typedef of a specialized register,
 * a selector key in a table without an action_selector (p4c drops it: nothing
 * hashes it), and arithmetic on (int) of run-time values, cast back to a width. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> v; int<8> s; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { bit<16> sel; }

typedef bit<16> cell_t;
typedef register<cell_t> cells_t;

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    cells_t(4) cells;
    action to(bit<9> port) { sm.egress_spec = port; }
    table pick {
        key = { hdr.h.r: exact; meta.sel: selector; }
        actions = { to; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        meta.sel = 7;
        pick.apply();
        hdr.h.v = (bit<8>)((int)hdr.h.v + 300);
        hdr.h.s = (int<8>)((int)hdr.h.s * 3 - 1);
        cell_t old;
        cells.read(old, 2);
        cells.write(2, old + (cell_t)hdr.h.r);
        hdr.h.r = (bit<8>)old;
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
