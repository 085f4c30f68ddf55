/* Function-like macros (C99 6.10.3, as p4c's cpp expands them): nested parentheses
 * in arguments, a macro inside an argument, an argument list on two lines, a macro
 * that names another, and a variadic one. */
#include <core.p4>
#include <v1model.p4>

#define INC(x) ((x) + 1)
#define ADD(a, b) ((a) + (b))
#define PORT_OF(t) ((bit<9>)(t)[2:0])
#define SAME(x) x
#define FIRST(a, ...) (a)
#define PICK INC
#define BASE 0x10

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header val_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { eth_t eth; val_t val; }
struct meta_t { }

parser MParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
               inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.val); transition accept; }
}
control MVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.val.a = INC(hdr.val.a);                          /* a + 1 */
        hdr.val.b = ADD((hdr.val.b & 0x0f), INC(BASE));      /* (b & 15) + 17 */
        hdr.val.c = ADD(SAME(hdr.val.c),
                        FIRST(2, 3, 4));                     /* c + 2 */
        hdr.val.d = PICK(hdr.val.d) + BASE;                  /* d + 1 + 16 */
        sm.egress_spec = PORT_OF(hdr.eth.type);              /* low 3 bits of the type */
    }
}
control MEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.val); }
}
V1Switch(MParser(), MVerify(), MIngress(), MEgress(), MCompute(), MDeparser()) main;
