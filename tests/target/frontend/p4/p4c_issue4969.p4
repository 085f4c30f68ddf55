/* Names as in p4c's test program issue-4969-bmv2.p4, whose P4Info p4c publishes
 * (testdata/p4_16_samples_outputs/issue-4969-bmv2.p4.p4info.txtpb): table
 * ingressImpl.t1 = 49173205 with initial_default_action 21257015 (NoAction),
 * actions foo1 = 25646030 and bar = 21008649. Written here, not copied. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser parserImpl(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t stdmeta) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control verifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
action foo1() { }
@name("bar") action foo2() { }
control ingressImpl(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t stdmeta) {
    table t1 {
        actions = { NoAction; foo1; foo2; }
        key = { hdr.ethernet.etherType: exact; }
        default_action = NoAction();
        size = 512;
    }
    apply { t1.apply(); }
}
control egressImpl(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t stdmeta) { apply { } }
control updateChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control deparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(parserImpl(), verifyChecksum(), ingressImpl(), egressImpl(), updateChecksum(),
         deparserImpl()) main;
