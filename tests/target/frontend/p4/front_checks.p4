/* Checks p4c's front end makes that the target makes too: the three forms of
 * @p4runtime_translation, a shift by a `type` value once cast to bit<W>, and a
 * block instantiated twice whose tables keep names of their own. */
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("example.org/shift_t", bit<8>)
type bit<8> shift_t;
@p4runtime_translation("example.org/label_t", string)
type bit<16> label_t;
@p4runtime_translation("example.org/old_t", 32)
type bit<32> old_t;

header op_t { bit<8> value; shift_t amount; }
struct headers_t { op_t op; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.op); transition accept; }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Fwd(inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    @name("choose") table choose { actions = { to; NoAction; } default_action = NoAction(); }
    apply { choose.apply(); }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Fwd() first;
    Fwd() second;
    apply {
        hdr.op.value = hdr.op.value << (bit<8>)hdr.op.amount;
        sm.egress_spec = 1;
        first.apply(sm);
        second.apply(sm);
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.op); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
