// Annotation bodies in every form P4_16 allows (18.1): free-form tokens, a string
// over several lines, structured [key=value] and [list] annotations.
#include <core.p4>
#include <v1model.p4>

@scrabble(
    - That's what it said: six by nine.
    0xdeadbeef
)
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @MixedKV[label="text", flag=true, n=2*3]
    action forward(bit<9> port) { sm.egress_spec = port; }
    @entry_restriction("
        ether_type != 0;
    ") @List[1, "two", 3]
    table route {
        key = { hdr.eth.ether_type: exact; }
        actions = { forward; NoAction; }
        default_action = NoAction();
    }
    apply { route.apply(); }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
