// @priority(N) on const entries. p4c's BMv2 back end gives an
// annotated entry priority N and the others their position (1, 2, 3, ...); BMv2
// prefers the smaller number. So here: e1 = 10, e2 = 2, e3 = 1, e4 = 4.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> r; }
struct headers_t { h_t h; }
struct meta_t { }

parser PParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control PVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control PIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.r = v; }
    table pick {
        key = { hdr.h.k : ternary; }
        actions = { set; }
        default_action = set(0xee);
        const entries = {
            @priority(10) 0x05 &&& 0xff : set(1);
            0x00 &&& 0xf0 : set(2);
            @priority(1) 0x07 &&& 0xff : set(3);
            0x08 &&& 0x08 : set(4);
        }
    }
    apply { pick.apply(); sm.egress_spec = 2; }
}
control PEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control PCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control PDeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(PParser(), PVerify(), PIngress(), PEgress(), PCompute(), PDeparser()) main;
