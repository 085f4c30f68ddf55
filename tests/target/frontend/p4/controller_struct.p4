/* A controller header with a struct-typed field (p4c's issue3329-bmv2.p4): the
 * P4Info names its fields dest.port and dest.tag, and a PacketOut's metadata land in
 * them in wire order. */
#include <core.p4>
#include <v1model.p4>

struct dest_t { bit<16> port; bit<8> tag; }
@controller_header("packet_out")
header packet_out_t { dest_t dest; bit<8> pad; }
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { packet_out_t packet_out; eth_t eth; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { 64: from_cpu; default: eth; }
    }
    state from_cpu { pkt.extract(hdr.packet_out); transition eth; }
    state eth { pkt.extract(hdr.eth); transition accept; }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = (bit<9>)hdr.packet_out.dest.port;
            hdr.eth.type = hdr.packet_out.dest.tag ++ hdr.packet_out.pad;
            hdr.packet_out.setInvalid();
        }
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.packet_out); pkt.emit(hdr.eth); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
