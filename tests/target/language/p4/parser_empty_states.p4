// Parser states with no statements: start and s1 are empty and
// go straight on; the header is never extracted, so ingress sees it invalid and
// sends the frame, unchanged, to port 2 (a valid header would go to port 3).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }

parser EParser(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { transition s1; }
    state s1 { transition accept; }
}
control EVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control EIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.isValid()) { sm.egress_spec = 3; } else { sm.egress_spec = 2; }
    }
}
control EEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control ECompute(inout headers_t hdr, inout meta_t m) { apply { } }
control EDeparser(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(EParser(), EVerify(), EIngress(), EEgress(), ECompute(), EDeparser()) main;
