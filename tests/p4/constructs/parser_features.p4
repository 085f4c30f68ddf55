/* Parser constructs: select on tuples with masks, ranges and default; header stacks
 * (next, last, lastIndex, size, [i], push_front, pop_front); a varbit header sized by
 * lookahead; lookahead of a header; advance; verify with program errors; a header
 * union; parser locals; v1model parser errors reaching ingress. */
#include <core.p4>
#include <v1model.p4>

error { BadVersion, BadCount }

const bit<8> KIND_ITEMS = 1;

header tag_t {
    bit<8> kind;
    bit<8> count;
}

header item_t {
    bit<7> v;
    bool   last;
}

header opt_t {
    bit<8>     len;
    varbit<64> data;
    bit<8>     trailer;
}

header v4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> ttl;
}

header v6_t {
    bit<4>  version;
    bit<4>  tc;
    bit<8>  hlim;
    bit<16> flow;
}

header_union ip_u {
    v4_t v4;
    v6_t v6;
}

header report_t {
    bit<8> err;
    bit<8> items;
    bit<8> last_index;
    bit<8> first_v;
    bit<8> last_v;
    bit<8> which_ip;
    bit<8> peeked;
    bit<8> skipped;
    bit<8> opt_len;
    bit<8> size;
}

struct headers_t {
    report_t  report;
    tag_t     tag;
    item_t[4] items;
    opt_t     opt;
    ip_u      ip;
    tag_t     after;
}

struct metadata_t {
    bit<8> peeked;
    bit<8> skipped;
    bit<8> items;
    bit<8> last_index;
    bit<8> last_v;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    bit<8> states_seen;

    state start {
        states_seen = 1;
        pkt.extract(hdr.tag);
        transition select(hdr.tag.kind, hdr.tag.count) {
            (KIND_ITEMS, _): parse_items;
            (2, 0 &&& 0x80): parse_opt;        // count below 128
            (3, 0 .. 9): parse_ip;
            (4, default): skip;
            (5, _): check;
            default: accept;
        }
    }
    state parse_items {
        pkt.extract(hdr.items.next);
        // next, last and lastIndex exist in parsers only
        meta.last_index = (bit<8>)hdr.items.lastIndex;
        meta.items = meta.last_index + 1;
        meta.last_v = (bit<8>)hdr.items.last.v;
        transition select(hdr.items.last.last) {
            true: accept;
            false: parse_items;
        }
    }
    state parse_opt {
        bit<32> bytes = (bit<32>)pkt.lookahead<bit<8>>();
        pkt.extract(hdr.opt, bytes * 8);
        transition accept;
    }
    state parse_ip {
        v6_t peek = pkt.lookahead<v6_t>();
        meta.peeked = peek.hlim;
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_v4;
            6: parse_v6;
            default: bad_version;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.ip.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.ip.v6);
        transition accept;
    }
    state bad_version {
        verify(false, error.BadVersion);
        transition accept;
    }
    state skip {
        pkt.advance(16);
        states_seen = states_seen + 1;
        meta.skipped = states_seen;
        pkt.extract(hdr.after);
        transition accept;
    }
    state check {
        verify(hdr.tag.count == 0, error.BadCount);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ing(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.report.setValid();
        if (sm.parser_error == error.NoError) {
            hdr.report.err = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.report.err = 1;
        } else if (sm.parser_error == error.StackOutOfBounds) {
            hdr.report.err = 2;
        } else if (sm.parser_error == error.BadVersion) {
            hdr.report.err = 3;
        } else if (sm.parser_error == error.BadCount) {
            hdr.report.err = 4;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.report.err = 5;
        } else {
            hdr.report.err = 0xff;
        }
        hdr.report.items = meta.items;
        hdr.report.size = (bit<8>)hdr.items.size;
        if (hdr.items[0].isValid()) {
            hdr.report.last_index = meta.last_index;
            hdr.report.first_v = (bit<8>)hdr.items[0].v;
            hdr.report.last_v = meta.last_v;
            if (hdr.tag.count == 0xf0) {
                hdr.items.pop_front(1);
            } else if (hdr.tag.count == 0xf2 || hdr.tag.count == 0xf3) {
                bit<32> i = hdr.tag.count == 0xf2 ? 32w1 : 32w7;
                hdr.items[i] = hdr.items[0];     // a run-time index; 7 is out of range
            } else if (hdr.tag.count == 0xf1) {
                hdr.items.push_front(2);
                hdr.items[1].setValid();
                hdr.items[1].v = 0x55;
            }
        }
        if (hdr.ip.isValid()) {
            hdr.report.which_ip = hdr.ip.v4.isValid() ? 8w4 : 8w6;
        }
        if (hdr.tag.count == 9 && hdr.ip.v4.isValid()) {
            hdr.ip.v6.setValid();                 // a union holds one member: v4 goes
            hdr.ip.v6 = { 6, 0, 0x40, 0xbeef };
        }
        hdr.report.peeked = meta.peeked;
        hdr.report.skipped = meta.skipped;
        if (hdr.opt.isValid()) {
            hdr.report.opt_len = hdr.opt.len;
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Dep(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.report);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.items);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.after);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
