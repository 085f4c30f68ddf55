/* p4c's core.p4 and v1model.p4 define _CORE_P4_ and _V1_MODEL_P4_ (their include
 * guards); programs written for p4c test them. Port 2 only if both are seen. */
#include <core.p4>
#include <v1model.p4>
#include <core.p4>  /* a second include is skipped by the guard */

#ifndef _CORE_P4_
#error "core.p4 does not define _CORE_P4_"
#endif

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }

parser GParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
               inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control GVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control GIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
#if defined(_V1_MODEL_P4_) && defined(_CORE_P4_)
        sm.egress_spec = 2;
#else
        sm.egress_spec = 3;
#endif
#ifdef _V1_MODEL_P4_
        hdr.eth.type = 0x0801;
#endif
    }
}
control GEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control GCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control GDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(GParser(), GVerify(), GIngress(), GEgress(), GCompute(), GDeparser()) main;
