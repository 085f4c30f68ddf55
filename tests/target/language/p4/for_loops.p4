// for loops (P4_16 1.2.4): the three-clause form with break/continue, two updates
// and a condition read from the packet; the for-in form over a range, a list and a
// header stack; nested loops; a loop inside an action. Results go to hdr.d.r1..r6.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header data_t {
    bit<8> n; bit<8> a; bit<8> b; bit<8> c;
    bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; bit<8> r5; bit<8> r6;
}
header elem_t { bit<8> v; }
struct headers_t { ethernet_t eth; data_t d; elem_t[3] st; }
struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x1234: data; default: accept; }
    }
    state data {
        pkt.extract(hdr.d);
        pkt.extract(hdr.st[0]);
        pkt.extract(hdr.st[1]);
        pkt.extract(hdr.st[2]);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action popcount(in bit<8> v, out bit<8> n) {
        n = 0;
        for (bit<8> i = 0; i < 8; i = i + 1) {
            if (((v >> i) & 1) == 1) {
                n = n + 1;
            }
        }
    }
    apply {
        sm.egress_spec = 2;
        if (!hdr.d.isValid()) {
            return;
        }
        popcount(hdr.d.c, hdr.d.r1);
        bit<8> s = 0;
        for (bit<8> i = 0; i < hdr.d.n; i = i + 1) {
            if (i == 2) {
                continue;
            }
            if (i == 5) {
                break;
            }
            s = s + i;
        }
        hdr.d.r2 = s;
        bit<8> acc = 0;
        for (bit<8> i in 1 .. 3) {
            for (bit<8> j in {1, 2, 4}) {
                if (i == 2 && j == 4) {
                    break;
                }
                if (i == 3 && j == 2) {
                    continue;
                }
                acc = acc + i * j;
            }
        }
        hdr.d.r3 = acc;
        bit<8> hi = hdr.d.b;
        bit<8> k = 0;
        for (bit<8> i = hdr.d.a; i < hi; i = i + 1, hi = hi - 1) {
            k = k + 1;
        }
        bit<8> m = 0;
        for (; m < 100; ) {
            m = m + 1;
            if (m == 3) {
                break;
            }
        }
        hdr.d.r4 = (k << 4) | m;
        bit<8> count = 0;
        for (bit<8> x in 250 .. 255) {
            count = count + 1;
        }
        hdr.d.r5 = count;
        bit<8> sum = 0;
        for (elem_t e in hdr.st) {
            sum = sum + e.v;
        }
        hdr.d.r6 = sum;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
        pkt.emit(hdr.st);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
