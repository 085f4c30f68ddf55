/*
 * v1switch_ops.p4: exercises simple_switch's packet sequence from the runtime's
 * side (tests/target/runtime/test_rt_v1switch.py). A frame carries an Ethernet
 * header with EtherType 0x88b5 and a "cmd" header: op says what ingress/egress
 * do, arg is an output port, val a parameter. On the way out the pipeline writes
 * what it saw (instance types, preserved metadata, rid, queue depths, length)
 * into the report fields of cmd, so a test checks exact output bytes.
 * Only P4_16 core and v1model constructs: p4c-bm2-ss and BMv2 run this file.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETYPE_CMD = 0x88b5;

const bit<8> OP_FWD = 1;
const bit<8> OP_MARK_TO_DROP = 2;
const bit<8> OP_SPEC_511 = 3;
const bit<8> OP_MCAST = 4;
const bit<8> OP_CLONE_I2E = 5;
const bit<8> OP_CLONE_E2E = 6;
const bit<8> OP_RESUBMIT = 7;
const bit<8> OP_RECIRC = 8;
const bit<8> OP_TRUNCATE = 9;
const bit<8> OP_DIGEST = 10;
const bit<8> OP_PRIORITY = 11;
const bit<8> OP_METER = 12;
const bit<8> OP_HASH = 13;
const bit<8> OP_EGRESS_DROP = 14;
const bit<8> OP_TABLE = 15;
const bit<8> OP_ASSERT = 16;
const bit<8> OP_RESUBMIT_FOREVER = 17;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header cmd_t {
    bit<8>  op;
    bit<8>  arg;
    bit<16> val;
    /* reports, zero on input */
    bit<8>  in_type;     /* instance_type seen by ingress */
    bit<8>  eg_type;     /* instance_type seen by egress */
    bit<8>  mark;        /* preserved user metadata seen by egress */
    bit<8>  err;         /* parser_error seen by ingress (0 NoError) */
    bit<16> rid;         /* egress_rid */
    bit<16> hash;        /* OP_HASH: crc16 of the Ethernet addresses */
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> pkt_len;     /* packet_length seen by egress */
    bit<32> ig_ts;       /* ingress_global_timestamp, low 32 bits (us) */
    bit<32> deq_delta;   /* deq_timedelta (us) */
}

struct headers_t {
    ethernet_t eth;
    cmd_t      cmd;
}

struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct meta_t {
    @field_list(1)
    bit<8> mark;
    bit<8> in_type;
    bit<8> err;
    bit<16> hash;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            ETYPE_CMD: parse_cmd;
            default: accept;
        }
    }
    state parse_cmd {
        pkt.extract(hdr.cmd);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(512, CounterType.packets_and_bytes) rx;
    register<bit<32>>(16) last_len;
    meter(4, MeterType.packets) m;

    action fwd(bit<9> port) {
        sm.egress_spec = port;
    }
    action set_mark(bit<8> mark) {
        meta.mark = mark;
    }
    table ports {
        key = { hdr.cmd.arg : exact; }
        actions = { fwd; set_mark; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        rx.count((bit<32>)sm.ingress_port);
        last_len.write(0, sm.packet_length);
        meta.in_type = (bit<8>)sm.instance_type;
        if (sm.parser_error != error.NoError) {
            meta.err = 0xee;
            sm.egress_spec = 9;
            return;
        }
        if (!hdr.cmd.isValid()) {
            sm.egress_spec = 1;
            return;
        }
        hdr.cmd.in_type = (bit<8>)sm.instance_type;
        sm.egress_spec = (bit<9>)hdr.cmd.arg;
        if (hdr.cmd.op == OP_MARK_TO_DROP) {
            mark_to_drop(sm);
        } else if (hdr.cmd.op == OP_SPEC_511) {
            sm.egress_spec = 511;
        } else if (hdr.cmd.op == OP_MCAST) {
            sm.mcast_grp = hdr.cmd.val;
        } else if (hdr.cmd.op == OP_CLONE_I2E) {
            meta.mark = 0xab;
            hdr.eth.src = 0;  /* the clone must not see this: it is the packet as received */
            clone_preserving_field_list(CloneType.I2E, (bit<32>)hdr.cmd.val, 1);
        } else if (hdr.cmd.op == OP_RESUBMIT) {
            if (sm.instance_type == 0) {
                meta.mark = 0x77;
                hdr.eth.src = 0;  /* gone again: resubmit starts from the received packet */
                resubmit_preserving_field_list(1);
            }
        } else if (hdr.cmd.op == OP_RECIRC) {
            if (sm.instance_type == 0) {
                sm.egress_spec = 3;
            }
        } else if (hdr.cmd.op == OP_TRUNCATE) {
            truncate((bit<32>)hdr.cmd.val);
        } else if (hdr.cmd.op == OP_DIGEST) {
            digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });
        } else if (hdr.cmd.op == OP_PRIORITY) {
            sm.priority = (bit<3>)hdr.cmd.val;
        } else if (hdr.cmd.op == OP_METER) {
            bit<8> colour;
            m.execute_meter((bit<32>)hdr.cmd.val, colour);
            meta.mark = colour;
        } else if (hdr.cmd.op == OP_HASH) {
            hash(meta.hash, HashAlgorithm.crc16, (bit<16>)0, { hdr.eth.dst, hdr.eth.src }, (bit<32>)65536);
        } else if (hdr.cmd.op == OP_TABLE) {
            sm.egress_spec = 511;
            ports.apply();
        } else if (hdr.cmd.op == OP_ASSERT) {
            assert(hdr.cmd.val != 0xdead);
        } else if (hdr.cmd.op == OP_RESUBMIT_FOREVER) {
            resubmit_preserving_field_list(1);
        }
        hdr.cmd.ig_ts = (bit<32>)sm.ingress_global_timestamp;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.err != 0) {
            hdr.eth.etype = 0xeeee;
            return;
        }
        if (!hdr.cmd.isValid()) {
            return;
        }
        hdr.cmd.eg_type = (bit<8>)sm.instance_type;
        hdr.cmd.rid = sm.egress_rid;
        hdr.cmd.enq_qdepth = (bit<32>)sm.enq_qdepth;
        hdr.cmd.deq_qdepth = (bit<32>)sm.deq_qdepth;
        hdr.cmd.pkt_len = sm.packet_length;
        hdr.cmd.deq_delta = sm.deq_timedelta;
        hdr.cmd.hash = meta.hash;
        if (hdr.cmd.op == OP_CLONE_E2E && sm.instance_type == 0) {
            meta.mark = 0xcd;
            meta.hash = 0x1234;  /* not in field list 1: the clone's egress must see 0 */
            hdr.cmd.hash = 0x1234;
            hdr.eth.dst = 0x0000000000ee;  /* the egress clone is the packet as it leaves */
            clone_preserving_field_list(CloneType.E2E, (bit<32>)hdr.cmd.val, 1);
        } else if (hdr.cmd.op == OP_RECIRC && meta.in_type == 0) {
            /* meta.in_type, not sm.instance_type: simple_switch hands every unicast
               packet to egress as NORMAL, recirculated ones included */
            meta.mark = 0x88;
            hdr.cmd.val = hdr.cmd.val + 1;  /* seen by the second pass: the deparsed packet */
            recirculate_preserving_field_list(1);
        } else if (hdr.cmd.op == OP_EGRESS_DROP) {
            mark_to_drop(sm);
        }
        hdr.cmd.mark = meta.mark;
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.cmd);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
