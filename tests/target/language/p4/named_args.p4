// Arguments passed by name (V1Switch, extern functions) and a parser state without a
// transition statement (it goes to reject).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header data_t { bit<8> a; bit<8> b; bit<16> sum; }
struct headers_t { ethernet_t eth; data_t d; }
struct meta_t { bit<1> bad; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x1234: data; 0x1235: stop; default: accept; }
    }
    state data {
        pkt.extract(hdr.d);
        transition accept;
    }
    state stop {
        pkt.extract(hdr.d);
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(algo = HashAlgorithm.csum16, checksum = hdr.d.sum,
                        data = { hdr.d.a, hdr.d.b }, condition = hdr.d.isValid());
    }
}
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (sm.checksum_error == 1) {
            hdr.d.b = 0xee;
        }
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(data = { hdr.d.a, hdr.d.b }, algo = HashAlgorithm.csum16,
                        condition = hdr.d.isValid() && hdr.d.b == 0xee, checksum = hdr.d.sum);
    }
}
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); } }

V1Switch(vr = MyVerify(), p = MyParser(), ig = MyIngress(), eg = MyEgress(), ck = MyCompute(),
         dep = MyDeparser()) main;
