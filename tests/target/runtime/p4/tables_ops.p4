/*
 * tables_ops.p4: tables with every runtime feature the control plane reaches
 * (tests/target/runtime/test_rt_switch_tables.py): an action selector with a
 * per-flow key, a ternary ACL with a direct counter and a direct meter, an LPM
 * route table, const entries with a const default action, and a per-packet
 * spray selector keyed on a random number.
 * Only P4_16 core and v1model constructs: p4c-bm2-ss and BMv2 run this file.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header probe_t {
    bit<8>  kind;     /* 1 spray per flow, 2 acl, 3 route, 4 const table, 5 spray per packet */
    bit<8>  colour;   /* written: direct meter colour of the acl hit */
    bit<16> flow;
    bit<32> addr;
}

struct headers_t {
    ethernet_t eth;
    probe_t    probe;
}

struct meta_t {
    bit<16> entropy;
}

parser TParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            0x88b6: parse_probe;
            default: accept;
        }
    }
    state parse_probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control TVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control TIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) acl_hits;
    direct_meter<bit<8>>(MeterType.packets) acl_rate;
    action_selector(HashAlgorithm.crc16, 64, 16) flow_sel;
    action_selector(HashAlgorithm.crc16, 64, 16) packet_sel;

    action fwd(bit<9> port) {
        sm.egress_spec = port;
    }
    action drop() {
        mark_to_drop(sm);
    }
    action acl_fwd(bit<9> port) {
        sm.egress_spec = port;
        acl_rate.read(hdr.probe.colour);
    }
    action acl_miss() {
        mark_to_drop(sm);
    }

    table spray {
        key = {
            hdr.eth.dst    : exact;
            hdr.eth.src    : selector;
            hdr.probe.flow : selector;
        }
        actions = { fwd; drop; }
        implementation = flow_sel;
        size = 16;
    }
    table spray_per_packet {
        key = {
            hdr.eth.dst   : exact;
            meta.entropy  : selector;
        }
        actions = { fwd; drop; }
        implementation = packet_sel;
        size = 16;
    }
    table acl {
        key = {
            hdr.eth.src    : ternary;
            hdr.probe.flow : range;
        }
        actions = { acl_fwd; @defaultonly acl_miss; }
        default_action = acl_miss();
        counters = acl_hits;
        meters = acl_rate;
        size = 8;
    }
    table route {
        key = { hdr.probe.addr : lpm; }
        actions = { fwd; drop; }
        default_action = drop();
        size = 64;
    }
    table fixed {
        key = { hdr.probe.flow : exact; }
        actions = { fwd; drop; }
        const default_action = drop();
        const entries = {
            0x0001 : fwd(11);
            0x0002 : fwd(12);
        }
    }

    apply {
        if (!hdr.probe.isValid()) {
            mark_to_drop(sm);
            return;
        }
        if (hdr.probe.kind == 1) {
            spray.apply();
        } else if (hdr.probe.kind == 2) {
            acl.apply();
        } else if (hdr.probe.kind == 3) {
            route.apply();
        } else if (hdr.probe.kind == 4) {
            fixed.apply();
        } else if (hdr.probe.kind == 5) {
            random(meta.entropy, 0, 0xffff);
            spray_per_packet.apply();
        } else {
            mark_to_drop(sm);
        }
    }
}

control TEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control TCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control TDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.probe);
    }
}

V1Switch(TParser(), TVerify(), TIngress(), TEgress(), TCompute(), TDeparser()) main;
