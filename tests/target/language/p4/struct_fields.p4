// Struct-typed fields inside headers (serialized inline, h.s.f, table keys),
// lookahead<struct>() (also as a discarded statement), a variable of tuple type,
// `_` as an out argument (extract<T>(_) and a function's out parameter), and
// serializable-enum members as keyset values in const entries (with a mask and _).
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind { A = 0x01, B = 0x02, C = 0x10 }

struct addr_t { bit<16> hi; bit<8> lo; }
struct inner_t { bit<4> a; bit<4> b; }
struct outer_t { inner_t i; bit<8> c; }
struct pre_t { bit<4> ver; bit<4> flags; bit<8> kind; }
struct quad_t { bit<16> a; bit<16> b; }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header skip_t { bit<16> x; }
header rec_t {
    Kind kind; addr_t addr; outer_t o;
    bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; bit<8> r5;
}
struct headers_t { ethernet_t eth; rec_t rec; }
struct metadata_t { bit<4> ver; bit<4> flags; bit<8> kind; }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pre_t p = pkt.lookahead<pre_t>();
        meta.ver = p.ver;
        meta.flags = p.flags;
        meta.kind = p.kind;
        transition select(p.ver) { 0xf: skip; default: rec; }
    }
    state skip {
        pkt.lookahead<quad_t>();
        pkt.extract<skip_t>(_);
        transition rec;
    }
    state rec {
        pkt.extract(hdr.rec);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

void split(in bit<8> v, out bit<4> hi, out bit<4> lo) {
    hi = v[7:4];
    lo = v[3:0];
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_r1(bit<8> v) { hdr.rec.r1 = v; }
    action set_r2(bit<8> v) { hdr.rec.r2 = v; }
    table by_addr {
        key = { hdr.rec.addr.hi: exact; hdr.rec.addr.lo: exact; }
        actions = { set_r1; NoAction; }
        default_action = NoAction();
    }
    table by_kind {
        key = { hdr.rec.kind: ternary; }
        actions = { set_r2; }
        const entries = {
            Kind.A : set_r2(0xa1);
            Kind.C &&& 0xf0 : set_r2(0xc0);
            _ : set_r2(0xff);
        }
        default_action = set_r2(0);
    }
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error == error.PacketTooShort) {
            hdr.eth.ether_type = 0xbad1;
        }
        if (!hdr.rec.isValid()) {
            return;
        }
        by_addr.apply();
        by_kind.apply();
        bit<4> a = hdr.rec.o.i.a;
        hdr.rec.o.i.a = hdr.rec.o.i.b;
        hdr.rec.o.i.b = a;
        tuple<bit<8>, bit<16>> t = { hdr.rec.o.c, hdr.rec.addr.hi };
        bit<4> lo;
        split(hdr.rec.o.c, _, lo);
        hdr.rec.r3 = t[0] + (bit<8>)t[1] + (bit<8>)lo;
        hdr.rec.r4 = meta.kind;
        hdr.rec.r5 = meta.ver ++ meta.flags;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.rec);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
