// Action profiles and selectors written in place in a table's implementation property.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t eth; }
struct meta_t { bit<8> flow; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); meta.flow = hdr.eth.src[7:0]; transition accept; }
}
control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action forward(bit<9> port) { sm.egress_spec = port; }
    table by_type {
        key = { hdr.eth.ether_type: exact; }
        actions = { forward; NoAction; }
        @name("type_prof") implementation = action_profile(32w16);
    }
    table spread {
        key = { hdr.eth.dst[7:0]: exact @name("dst_low"); meta.flow: selector; }
        actions = { forward; NoAction; }
        @name("spread_sel") implementation = action_selector(HashAlgorithm.identity, 32w16, 32w8);
    }
    apply {
        if (!by_type.apply().hit) { spread.apply(); }
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
