/* Tables and externs: const entries (ternary/range/optional with implied priorities,
 * lpm), const default actions, @name/@defaultonly/@tableonly, switch on action_run,
 * hit/miss, action_profile/action_selector, direct_counter/direct_meter, counter,
 * register, meter, hash, random, digest, clone, truncate, log_msg, assert, exit,
 * return, @field_list metadata and resubmit. One op code per behaviour. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<8>  k8;
    bit<16> k16;
    bit<32> k32;
    bit<8>  out1;
    bit<8>  out2;
    bit<16> out16;
    bit<8>  color;
    bit<8>  flags;
}

@controller_header("packet_in")
header cpu_in_t {
    bit<9> ingress_port;
    @id(2) bit<7> pad;
}

struct headers_t { h_t h; }

struct metadata_t {
    @field_list(1) bit<8> kept;
    bit<8> lost;
}

struct learn_t {
    bit<8>  k8;
    bit<16> k16;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ing(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(16, CounterType.packets_and_bytes) pkts;
    register<bit<16>>(8) regs;
    meter(4, MeterType.packets) m;
    direct_counter(CounterType.packets) dc;
    direct_meter<bit<8>>(MeterType.bytes) dm;
    action_profile(64) prof;
    action_selector(HashAlgorithm.crc16, 32w128, 32w16) sel;

    action set1(bit<8> v) { hdr.h.out1 = v; }
    action set2(bit<8> v) { hdr.h.out2 = v; }
    action nop() { }

    @name("classify")
    table ternary_t {
        key = {
            hdr.h.k16: ternary;
            hdr.h.k8: range @name("k8r");
            hdr.h.k32: optional;
        }
        actions = { set1; @defaultonly nop; }
        const default_action = nop();
        const entries = {
            (0x1200 &&& 0xff00, 0 .. 9, _): set1(1);
            (0x1234, _, 5): set1(2);
            (_, 10 .. 20, _): set1(3);
        }
    }
    table lpm_const {
        key = { hdr.h.k32: lpm; }
        actions = { set2; @tableonly nop; }
        default_action = set2(0xee);
        const entries = {
            0x0a000000 &&& 0xff000000: set2(8);
            0x0a010000 &&& 0xffff0000: set2(v = 16);
        }
    }
    action set2_metered(bit<8> v) {
        hdr.h.out2 = v;
        dm.read(hdr.h.color);            // BMv2 reads a direct meter in its table's actions
    }
    table counted {
        key = { hdr.h.k8: exact; }
        actions = { set2_metered; nop; }
        counters = dc;
        meters = dm;
    }
    table profiled {
        key = { hdr.h.k8: exact; }
        actions = { set1; nop; }
        implementation = prof;
    }
    table selected {
        key = {
            hdr.h.k8: exact;
            hdr.h.k16: selector;
            hdr.h.k32: selector;
        }
        actions = { set1; nop; }
        implementation = sel;
    }
    table prio_t {
        key = { hdr.h.k8: ternary; }
        actions = { set1; }
        priority_delta = 10;
        entries = {
            priority=100: 0x01 &&& 0x0f: set1(1);
            0x12 &&& 0xff: set1(2);              // implied priority 90
            priority=95: 0x00 &&& 0x00: set1(3);
        }
    }
    action widen(int<8> d) { hdr.h.out16 = (bit<16>)((int<16>)d); }
    table signed_t {
        key = { hdr.h.k8: exact; }
        actions = { widen; }
    }
    table hitmiss {
        key = { hdr.h.k8: exact; }
        actions = { set1; set2; nop; }
        default_action = nop;
        size = 8;
    }

    apply {
        bit<8> flags = 0;
        switch (ternary_t.apply().action_run) {
            set1: { flags = flags | 1; }
            nop: { flags = flags | 2; }
        }
        if (lpm_const.apply().hit) {
            flags = flags | 4;
        }
        sm.egress_spec = 1;
        switch (hdr.h.op) {
            1: { pkts.count((bit<32>)hdr.h.k8); }
            2: { regs.write((bit<32>)hdr.h.k8, hdr.h.k16); }
            3: { regs.read(hdr.h.out16, (bit<32>)hdr.h.k8); }
            4: { m.execute_meter((bit<32>)hdr.h.k8, hdr.h.color); }
            5: { counted.apply(); }
            6: { profiled.apply(); }
            7: { selected.apply(); }
            8: { hash(hdr.h.out16, HashAlgorithm.identity, 16w0, { hdr.h.k8, hdr.h.k16 }, 32w65536); }
            9: { random(hdr.h.out1, 8w10, 8w20); }
            10: { digest<learn_t>(1, { hdr.h.k8, hdr.h.k16 }); }
            11: { clone(CloneType.I2E, 5); }
            12: { truncate(4); }
            13: { log_msg("k8={}", { hdr.h.k8 }); assert(hdr.h.k8 == 13); }
            14: { hdr.h.flags = 0xaa; exit; }
            15: {
                if (hitmiss.apply().miss) {
                    flags = flags | 8;
                }
            }
            16: { hdr.h.flags = 0xbb; return; }
            17:
            18: { hdr.h.out2 = 0x18; }
            19: {
                if (sm.instance_type == 0) {
                    meta.kept = 0x77;
                    meta.lost = 0x66;
                    resubmit_preserving_field_list(1);
                }
                hdr.h.out1 = meta.kept;
                hdr.h.out2 = meta.lost;
            }
            20: {
                hdr.h.setInvalid();
                hdr.h.setValid();            // BMv2: fields of a re-validated header are 0
                hdr.h.op = 20;
            }
            21: { hdr.h.setValid(); }        // already valid: unchanged
            22: { prio_t.apply(); }
            24: {
                headers_t copy = hdr;
                copy.h.out1 = 0x24;
                hdr = copy;                  // a whole parameter replaced
            }
            23: { signed_t.apply(); widen(-3); hdr.h.out1 = hdr.h.out16[7:0]; signed_t.apply(); }
            default: { hdr.h.out2 = 0xdd; }
        }
        hdr.h.flags = flags;
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
