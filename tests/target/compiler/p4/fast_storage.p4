/*
 * fast_storage.p4: the places where the fast path keeps packet state in locals and
 * holds effects back (tests/target/compiler/test_fast_path.py runs it both ways,
 * test_fast_path_by_hand.py checks its output).
 * A lookahead-driven parser loop over a header stack; a header copied whole and
 * then changed; fields written, the header invalidated and revalidated in one
 * block (the deparser must see the zeroed header with the later write only); a
 * header made valid outside the parser; fields of headers that were never parsed
 * read; a register read after its write in the same packet; counters.
 */
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header tag_t {
    bit<8> kind;
    bit<8> len;
    bit<16> val;
}

header extra_t {
    bit<32> seq;
    bit<32> seen;
}

struct headers_t {
    eth_t eth;
    eth_t orig;
    tag_t[4] tags;
    extra_t extra;
}

struct metadata_t {
    bit<32> seq;
    bit<32> again;
    bit<8> ntags;
}

parser FsParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            0x88b5: parse_tags;
            default: accept;
        }
    }
    state parse_tags {
        packet.extract(hdr.tags.next);
        meta.ntags = meta.ntags + 1;
        transition select(packet.lookahead<bit<8>>()) {
            0: accept;
            default: parse_tags;
        }
    }
}

control FsVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FsIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(4) seq;
    counter(8, CounterType.packets_and_bytes) rx;

    action to_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table fwd {
        key = { hdr.eth.dst: exact; }
        actions = { to_port; drop; NoAction; }
        default_action = to_port(1);
    }

    apply {
        rx.count((bit<32>)standard_metadata.ingress_port);
        if (hdr.eth.etype == 0) {
            drop();
            return;
        }
        hdr.orig = hdr.eth;
        hdr.eth.src = hdr.eth.dst;
        seq.read(meta.seq, 0);
        seq.write(0, meta.seq + 1);
        seq.read(meta.again, 0);
        if (hdr.tags[0].isValid()) {
            hdr.tags[1].val = 5;
            hdr.tags[1].setInvalid();
            hdr.tags[1].setValid();
            hdr.tags[1].len = meta.ntags;
            if (hdr.tags[3].val == 0) {
                hdr.tags[2].kind = 3;
            }
        }
        if (hdr.eth.etype == 0x88b6) {
            hdr.extra.setValid();
            hdr.extra.seq = meta.seq;
            hdr.extra.seen = meta.again;
        }
        fwd.apply();
    }
}

control FsEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    counter(8, CounterType.packets_and_bytes) tx;
    apply {
        tx.count((bit<32>)standard_metadata.egress_port);
    }
}

control FsCompute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FsDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.orig);
        packet.emit(hdr.tags);
        packet.emit(hdr.extra);
    }
}

V1Switch(FsParser(), FsVerify(), FsIngress(), FsEgress(), FsCompute(), FsDeparser()) main;
