/*
 * parser.p4: the parser and deparser shared by fabric.p4 and nic.p4.
 *
 * Why shared: both programs must read the same packets the same way; a second
 * copy of the parser would drift. Contract with the including program:
 *   - include headers.p4 first;
 *   - declare `struct metadata_t { parser_metadata_t prs; ... }` before
 *     including this file;
 *   - use MrcParser and MrcDeparser in V1Switch.
 *
 * What is parsed: Ethernet; IPv6; an IPv6 routing header's fixed part, and for
 * an SRH (type 4) within the limits of headers.p4 its segment list and TLVs;
 * an inner IPv6 header (next header 41); UDP; on UDP port 4791 the MRC-lite
 * transport headers (BTH, then RETH [+ IMMDT] for data, AETH + SACK for ACK/NACK,
 * PROBE for probes); ICMPv6 and the NDP NS/NA body with its link-layer option.
 * Anything else stays unparsed payload, so programs forward it on its IPv6
 * header or drop it; nothing is guessed.
 *
 * Parser errors (short packets, IPv6 version not 6) leave
 * standard_metadata.parser_error set: v1model still runs ingress, which must
 * drop and count such packets.
 */
#ifndef MRC_PARSER_P4
#define MRC_PARSER_P4

error {
    IPv6BadVersion
}

parser MrcParser(packet_in packet,
                 out headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    state start {
        meta.prs.srh_segs_todo = 0;
        meta.prs.srh_tlv_words = 0;
        meta.prs.srh_parsed = 0;
        meta.prs.l4_after_srh = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        verify(hdr.ipv6.version == 6, error.IPv6BadVersion);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_ROUTING: parse_routing;
            IP_PROTO_IPV6: parse_inner_ipv6;
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_ICMPV6: parse_icmpv6;
            default: accept;
        }
    }

    /*
     * Routing header: extract the fixed 8 bytes (every IPv6 routing header has
     * them), then go on only for an SRH whose segment list and TLVs fit the
     * header stacks and whose Hdr Ext Len covers Last Entry + 1 segments.
     */
    state parse_routing {
        packet.extract(hdr.srh);
        meta.prs.srh_segs_todo = hdr.srh.last_entry + 1;
        /* 8-byte words left after the segment list; wraps (>= 240) if negative. */
        meta.prs.srh_tlv_words = hdr.srh.hdr_ext_len - ((hdr.srh.last_entry + 1) << 1);
        transition select(hdr.srh.routing_type, hdr.srh.last_entry) {
            (SRH_ROUTING_TYPE, 0 &&& 0xF8): check_srh_length;   /* Last Entry 0..7 */
            default: accept;
        }
    }

    state check_srh_length {
        transition select(meta.prs.srh_tlv_words) {
            0 &&& 0xF0: parse_srh_segment;   /* 0..15 TLV words */
            16: parse_srh_segment;
            default: accept;
        }
    }

    state parse_srh_segment {
        packet.extract(hdr.srh_segments.next);
        meta.prs.srh_segs_todo = meta.prs.srh_segs_todo - 1;
        transition select(meta.prs.srh_segs_todo) {
            0: parse_srh_tlvs;
            default: parse_srh_segment;
        }
    }

    state parse_srh_tlvs {
        transition select(meta.prs.srh_tlv_words) {
            0: parse_after_srh;
            default: parse_srh_tlv_word;
        }
    }

    state parse_srh_tlv_word {
        packet.extract(hdr.srh_tlvs.next);
        meta.prs.srh_tlv_words = meta.prs.srh_tlv_words - 1;
        transition select(meta.prs.srh_tlv_words) {
            0: parse_after_srh;
            default: parse_srh_tlv_word;
        }
    }

    state parse_after_srh {
        meta.prs.srh_parsed = 1;
        transition select(hdr.srh.next_hdr) {
            IP_PROTO_IPV6: parse_inner_ipv6;
            IP_PROTO_UDP: parse_udp_after_srh;
            default: accept;
        }
    }

    state parse_udp_after_srh {
        meta.prs.l4_after_srh = 1;
        transition parse_udp;
    }

    state parse_inner_ipv6 {
        packet.extract(hdr.inner_ipv6);
        verify(hdr.inner_ipv6.version == 6, error.IPv6BadVersion);
        transition select(hdr.inner_ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_MRC: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        packet.extract(hdr.bth);
        transition select(hdr.bth.opcode) {
            MRC_OP_WRITE: parse_reth;
            MRC_OP_WRITE_IMM: parse_reth;
            MRC_OP_ACK: parse_aeth;
            MRC_OP_PROBE: parse_probe;
            MRC_OP_PROBE_REPLY: parse_probe;
            default: accept;
        }
    }

    state parse_reth {
        packet.extract(hdr.reth);
        transition select(hdr.bth.opcode) {
            MRC_OP_WRITE_IMM: parse_immdt;
            default: accept;
        }
    }

    state parse_immdt {
        packet.extract(hdr.immdt);
        transition accept;
    }

    state parse_aeth {
        packet.extract(hdr.aeth);
        packet.extract(hdr.sack);
        transition accept;
    }

    state parse_probe {
        packet.extract(hdr.probe);
        transition accept;
    }

    state parse_icmpv6 {
        packet.extract(hdr.icmpv6);
        transition select(hdr.icmpv6.type) {
            ICMPV6_TYPE_NS: parse_ndp;
            ICMPV6_TYPE_NA: parse_ndp;
            default: accept;
        }
    }

    /* NS/NA body; the link-layer option follows when the payload has room for it. */
    state parse_ndp {
        packet.extract(hdr.ndp);
        transition select(hdr.ipv6.payload_len) {
            0 &&& 0xFFE0: accept;   /* 0..31 bytes: no option */
            default: parse_ndp_option;
        }
    }

    state parse_ndp_option {
        packet.extract(hdr.ndp_option);
        transition accept;
    }
}

control MrcDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.srh);
        packet.emit(hdr.srh_segments);
        packet.emit(hdr.srh_tlvs);
        packet.emit(hdr.inner_ipv6);
        packet.emit(hdr.udp);
        packet.emit(hdr.bth);
        packet.emit(hdr.reth);
        packet.emit(hdr.immdt);
        packet.emit(hdr.aeth);
        packet.emit(hdr.sack);
        packet.emit(hdr.probe);
        packet.emit(hdr.icmpv6);
        packet.emit(hdr.ndp);
        packet.emit(hdr.ndp_option);
    }
}

#endif /* MRC_PARSER_P4 */
