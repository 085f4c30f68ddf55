/* P4Runtime test program: one of every object kind the server must handle.
 *
 * Tables with each match kind (exact, lpm, ternary+range+optional, const entries),
 * an action profile, an action selector, indirect and direct counters and meters,
 * a register, a digest, clone and multicast, and packet_in/packet_out controller
 * headers on CPU port 255. Valid P4_16 for p4c-bm2-ss (v1model).
 *
 * Frames: Ethernet; ether type 0x88B5 carries test_t. Tables write hdr.t.result so
 * tests can see which entry matched.
 */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header test_t {
    bit<32> key32;
    bit<16> k16;
    bit<8> k8;
    bit<16> sel;
    bit<8> mark;
    bit<16> result;
    bit<8> colour;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t eth;
    test_t t;
}

struct learn_t {
    bit<48> mac;
    bit<9> port;
}

struct metadata_t {
    bit<2> colour;
    bit<2> police_colour;
}

parser RtParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x88B5: parse_t;
            default: accept;
        }
    }
    state parse_t {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control RtVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RtIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) port_pkts;
    direct_counter(CounterType.packets_and_bytes) exact_hits;
    meter(16, MeterType.packets) police;
    direct_meter<bit<2>>(MeterType.bytes) lpm_meter;
    register<bit<32>>(16) last_port;
    action_profile(32) ap;
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) as_sel;

    action drop() {
        mark_to_drop(sm);
    }
    /* Send out of a port. */
    @brief("forward to a port")
    action fwd(bit<9> port) {
        sm.egress_spec = port;
    }
    action to_cpu() {
        sm.egress_spec = CPU_PORT;
    }
    action set_out(bit<16> v) {
        hdr.t.result = v;
    }
    action lpm_hit(bit<16> v) {
        lpm_meter.read(meta.colour);
        hdr.t.result = v;
    }
    action fwd_out(bit<9> port, bit<16> v) {
        sm.egress_spec = port;
        hdr.t.result = v;
    }

    table exact_t {
        key = { hdr.eth.dst_addr: exact; }
        actions = { fwd; to_cpu; drop; NoAction; }
        counters = exact_hits;
        default_action = NoAction();
        size = 4096;
    }
    table lpm_t {
#ifdef RT_V2
        key = { hdr.t.k16: lpm; }   /* v2 changes this key: its entries do not carry over */
#else
        key = { hdr.t.key32: lpm; }
#endif
        actions = { lpm_hit; @defaultonly NoAction; }
        meters = lpm_meter;
        default_action = NoAction();
    }
    table acl_t {
        key = {
            hdr.t.k16: ternary;
            hdr.t.k8: range;
            hdr.eth.ether_type: optional;
        }
        actions = { set_out; drop; NoAction; }
        default_action = NoAction();
        size = 4;
    }
    table const_t {
        key = { hdr.t.k8: exact; }
        actions = { set_out; NoAction; }
        const default_action = NoAction();
        const entries = {
            8w0x77: set_out(16w0x7777);
        }
    }
    table prof_t {
        key = { hdr.t.k8: exact; }
        actions = { set_out; fwd_out; }
        implementation = ap;
    }
    table sel_t {
        key = {
            hdr.t.k16: exact;
            hdr.t.sel: selector;
        }
        actions = { fwd_out; NoAction; }
        implementation = as_sel;
    }

    apply {
        port_pkts.count((bit<32>)sm.ingress_port);
        last_port.write(32w0, (bit<32>)sm.ingress_port);
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            exact_t.apply();
            if (hdr.t.isValid()) {
                lpm_t.apply();
                acl_t.apply();
                const_t.apply();
                prof_t.apply();
                sel_t.apply();
                police.execute_meter((bit<32>)hdr.t.k8[3:0], meta.police_colour);
                hdr.t.colour = (bit<8>)meta.police_colour;
                if (hdr.t.mark == 0xD1) {
                    digest<learn_t>(1, {hdr.eth.src_addr, sm.ingress_port});
                }
                if (hdr.t.mark == 0xC1) {
                    clone(CloneType.I2E, 32w5);
                }
                if (hdr.t.mark == 0xA1) {
                    sm.mcast_grp = 16w7;
                }
            }
        }
    }
}

control RtEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control RtComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RtDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.t);
    }
}

V1Switch(RtParser(), RtVerifyChecksum(), RtIngress(), RtEgress(),
         RtComputeChecksum(), RtDeparser()) main;
