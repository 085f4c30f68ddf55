/* Which actions the P4Info lists (p4c's front end decides, docs/p4runtime.md) and
 * every table's initial_default_action. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { bit<8> mark; bit<32> a; bit<32> b; }

parser AParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
               inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control AVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

action global_direct() { }                  /* called from an apply block: listed */
action global_inner() { }                   /* called only from an action: not listed */
action global_unused() { }                  /* never used: not listed */
action global_in_table(bit<16> t) { }      /* listed by a table: listed */

control AIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action add(bit<32> va, bit<32> vb) { meta.a = meta.a + va; meta.b = meta.b + vb; }
    action helper() { meta.mark = 7; }          /* called only from wrap: listed */
    action wrap() { helper(); global_inner(); } /* called from apply: listed */
    action count_it() { meta.mark = meta.mark + 1; }  /* called from apply: listed */
    action unused_local() { }                   /* never used: not listed */
    action only_from_unused() { }               /* named only by unused_caller: not listed */
    action unused_caller() { only_from_unused(); }
    @hidden action hidden_one() { }             /* @hidden: never listed */

    table route {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; global_in_table; }
        default_action = fwd(5);
    }
    table no_default {
        key = { hdr.eth.type: exact; }
        actions = { fwd; }
    }
    table const_default {
        key = { hdr.eth.src: exact; }
        actions = { add; }
        const default_action = add(10, 0);
    }
    apply {
        route.apply();
        no_default.apply();
        const_default.apply();
        count_it();
        wrap();
        global_direct();
        hidden_one();
    }
}
control AEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action egress_direct() { hdr.eth.type = 0x0800; }
    apply { egress_direct(); global_direct(); }
}
control ACompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control ADeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(AParser(), AVerify(), AIngress(), AEgress(), ACompute(), ADeparser()) main;
