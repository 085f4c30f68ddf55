/* default_action on tables with an action profile or selector: p4c-bm2-ss warns
 * "Target does not support default_action for T (due to action profiles)" (BMv2
 * ignores it); tables without it, or without a profile, get no warning. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { bit<16> h; }

parser IParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
               inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control IVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control IIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action miss_mark() { hdr.eth.type = 0xdead; }
    action_selector(HashAlgorithm.identity, 32w64, 32w16) sel;
    action_profile(32w16) prof;

    table with_selector {          /* line 22: warned */
        key = { hdr.eth.dst: exact; meta.h: selector; }
        actions = { fwd; miss_mark; }
        default_action = miss_mark();
        implementation = sel;
    }
    @name("renamed") table with_profile {   /* line 28: warned, under its @name */
        key = { hdr.eth.src: exact; }
        actions = { fwd; NoAction; }
        const default_action = NoAction();
        implementation = prof;
    }
    table profile_no_default {     /* no default_action: not warned */
        key = { hdr.eth.type: exact; }
        actions = { fwd; }
        implementation = prof;
    }
    table direct {                 /* no profile: not warned */
        key = { hdr.eth.type: exact; }
        actions = { fwd; miss_mark; }
        default_action = miss_mark();
    }
    apply {
        meta.h = hdr.eth.type;
        with_selector.apply();
        with_profile.apply();
        profile_no_default.apply();
        direct.apply();
    }
}
control IEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control ICompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control IDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(IParser(), IVerify(), IIngress(), IEgress(), ICompute(), IDeparser()) main;
