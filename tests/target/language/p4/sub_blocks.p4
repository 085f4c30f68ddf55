// Controls instantiated in controls and parsers in parsers (P4_16 13.8, 14):
// two instances of one control (each with its own table and counter), one
// instance applied several times, constructor parameters (a constant, a control
// passed in as a control type), copy-in/copy-out of the arguments, a parser
// instance applied from two states, a parser error raised inside it.
#include <core.p4>
#include <v1model.p4>

error { BadB }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header data_t { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; bit<8> p; }
struct headers_t { ethernet_t eth; data_t d; data_t d2; }
struct metadata_t { bit<8> n; }

parser DataParser(packet_in pkt, out data_t d, inout bit<8> seen) {
    state start {
        pkt.extract(d);
        seen = seen + 1;
        verify(d.b != 0xff, error.BadB);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    DataParser() dp;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x1234: one; 0x1235: two; default: accept; }
    }
    state one {
        dp.apply(pkt, hdr.d, meta.n);
        transition accept;
    }
    state two {
        dp.apply(pkt, hdr.d, meta.n);
        transition second;
    }
    state second {
        dp.apply(pkt, hdr.d2, meta.n);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Lookup(inout data_t d, out bit<8> res) {
    counter(4, CounterType.packets) hits;
    action set(bit<8> val) {
        res = val;
        hits.count(0);
    }
    action miss() {
        res = 0xee;
    }
    table t {
        key = { d.a: exact; }
        actions = { set; miss; }
        default_action = miss();
    }
    apply {
        t.apply();
    }
}

control Add(inout bit<8> x)(bit<8> k) {
    apply {
        x = x + k;
    }
}

control Stage(inout bit<8> v);

control Twice(inout bit<8> v) {
    apply {
        v = v * 2;
    }
}

control ApplyTwice(inout bit<8> v)(Stage s) {
    apply {
        s.apply(v);
        s.apply(v);
    }
}

control CopyCheck(in bit<8> before, inout data_t d, out bit<8> o) {
    apply {
        d.a = d.a + 1;
        o = before;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Lookup() lk;
    Lookup() lk2;
    Add(3) add3;
    Add(10) add10;
    Twice() tw;
    ApplyTwice(tw) quad;
    CopyCheck() cc;
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error == error.BadB) {
            hdr.eth.ether_type = 0xbad0;
        }
        if (!hdr.d.isValid()) {
            return;
        }
        lk.apply(hdr.d, hdr.d.r1);
        lk2.apply(hdr.d, hdr.d.r2);
        hdr.d.r3 = hdr.d.b;
        add3.apply(hdr.d.r3);
        add3.apply(hdr.d.r3);
        add10.apply(hdr.d.r3);
        hdr.d.r4 = hdr.d.a;
        quad.apply(hdr.d.r4);
        hdr.d.p = meta.n;
        cc.apply(hdr.d.a, hdr.d, hdr.d.b);
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
        pkt.emit(hdr.d2);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
