/* Generic headers and structs (p4c's issue4835-generic-struct.p4): pair_t<T> made
 * concrete as pair_t<bit<8>> and pair_t<bit<16>> inside headers_t<A, B>. */
#include <core.p4>
#include <v1model.p4>

header pair_t<T> { T first; T second; }
struct headers_t<A, B> { pair_t<A> small; pair_t<B> big; }
struct meta_t { }
typedef headers_t<bit<8>, bit<16>> hdrs_t;

parser P(packet_in pkt, out headers_t<bit<8>, bit<16>> hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.small); pkt.extract(hdr.big); transition accept; }
}
control Vfy(inout hdrs_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t<bit<8>, bit<16>> hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> t = hdr.small.first;
        hdr.small.first = hdr.small.second;
        hdr.small.second = t;
        hdr.big.second = hdr.big.first + (bit<16>)hdr.small.first;
    }
}
control Egr(inout hdrs_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Upd(inout hdrs_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in hdrs_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), Vfy(), Ing(), Egr(), Upd(), Dep()) main;
