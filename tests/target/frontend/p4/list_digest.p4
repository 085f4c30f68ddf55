/* Digests of lists without their type (p4c's issue430-1-bmv2.p4): p4c names them
 * digest_0, digest_1 (in source order) with a tuple type in the P4Info. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control Vfy(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.eth.type == 0x88b5) {
            digest(1, { hdr.eth.src, hdr.eth.type });
        } else if (hdr.eth.type == 0x0800) {
            digest(1, { hdr.eth.dst[7:0] });
        }
    }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
