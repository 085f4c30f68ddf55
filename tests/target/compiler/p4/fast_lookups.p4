/*
 * fast_lookups.p4: the table shapes the fast path looks up in place
 * (tests/target/compiler/test_fast_path_by_hand.py): one LPM key, exact + LPM keys.
 * Each action writes its argument into the frame, so the output shows which entry
 * (or the default) matched. Only P4_16 core and v1model constructs.
 */
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<16> tag;    /* exact key of by_tag_dst */
    bit<32> dst;    /* LPM key of both tables */
    bit<8>  lpm_out;
    bit<8>  pair_out;
}

struct headers_t { probe_t p; }
struct meta_t { bit<1> unused; }

parser FlParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.p);
        transition accept;
    }
}

control FlVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control FlIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action lpm_hit(bit<8> v) { hdr.p.lpm_out = v; }
    action pair_hit(bit<8> v) { hdr.p.pair_out = v; }
    table by_dst {
        key = { hdr.p.dst: lpm; }
        actions = { lpm_hit; NoAction; }
        default_action = NoAction();
    }
    table by_tag_dst {
        key = { hdr.p.tag: exact; hdr.p.dst: lpm; }
        actions = { pair_hit; NoAction; }
        default_action = NoAction();
    }
    apply {
        by_dst.apply();
        by_tag_dst.apply();
        sm.egress_spec = 1;
    }
}

control FlEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control FlCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control FlDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(FlParser(), FlVerify(), FlIngress(), FlEgress(), FlCompute(), FlDeparser()) main;
