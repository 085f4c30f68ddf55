/*
 * fabric.p4: the leaf and spine dataplane of the MRC fabric (v1model).
 *
 * Static SRv6 source routing (RFC 8754 / 8986 / 9800): uN and uA with the
 * NEXT-CSID flavor on a 32-bit block with 16-bit uSIDs, classic End / End.X with
 * an SRH (optionally PSP), plain IPv6 routing for everything else, packet
 * trimming of MRC-lite data of the trimmable traffic classes under congestion
 * (other classes queue and tail-drop, as on a lossy fabric), ECN CE marking of ECN-capable
 * packets above a queue threshold, Ethernet rewrite on egress, and counters for
 * every packet that enters, leaves or is dropped.
 *
 * The controller writes the tables once (docs/fabric.md); nothing here changes
 * when a link fails: recovery is the endpoints' job (they stop using the paths).
 * Only P4_16 core and v1model constructs: p4c-bm2-ss and BMv2 run this file.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"

/* ---- Drop reasons: index of the FabricIngress.drops / FabricEgress.drops counters ---- */
const bit<8> DROP_PARSER_ERROR = 1;   /* truncated headers, IPv6 version != 6 */
const bit<8> DROP_NOT_IPV6 = 2;       /* not an IPv6 frame */
const bit<8> DROP_HOP_LIMIT = 3;      /* hop limit <= 1 where it would be decremented */
const bit<8> DROP_BAD_SRH = 4;        /* SRH needed but malformed or beyond the parser's limits */
const bit<8> DROP_NO_ROUTE = 5;       /* no usid_fwd / ipv6_route entry for the DA */
const bit<8> DROP_UNKNOWN_USID = 6;   /* DA in the uSID block, active uSID unknown here */
const bit<8> DROP_NOT_FOR_ME = 7;     /* a SID of mine with nothing left to do (end of path) */
const bit<8> DROP_BAD_LENGTH = 8;     /* IPv6 payload length runs past the frame */
const bit<8> DROP_NO_PORT_MAC = 9;    /* egress port has no port_mac entry (FabricEgress.drops) */
#define DROP_REASONS 16

/* The uSID block (F3216): fcbb:bb00::/32, docs/addressing.md. */
const bit<32> USID_BLOCK = 0xfcbbbb00;

/* What my_sid found (metadata_t.sid_kind). */
const bit<2> SID_NONE = 0;    /* not mine: transit */
const bit<2> SID_UN = 1;      /* uN: End with NEXT-CSID */
const bit<2> SID_END = 2;     /* End with SRH */
const bit<2> SID_END_X = 3;   /* End.X with SRH */

#define PORTS 512

struct metadata_t {
    parser_metadata_t prs;
    bit<8> drop_reason;
    bit<2> sid_kind;
    bit<1> psp;             /* PSP flavor: pop the SRH when SL becomes 0 */
    bit<1> is_ua;           /* usid_fwd chose a uA (End.X with NEXT-CSID) */
    bit<1> routed;          /* out_port / nh_mac are set */
    port_t out_port;
    mac_addr_t nh_mac;      /* next hop's MAC: Ethernet destination on egress */
    bit<1> trim_enabled;
    bit<19> trim_threshold; /* trim when enq_qdepth is above this */
    bit<6> trim_dscp;
    bit<1> trim_class;      /* trim_class matched the DSCP: this traffic class may be trimmed */
    bit<1> trimmed;
    bit<1> ecn_enabled;
    bit<19> ecn_threshold;  /* mark CE when enq_qdepth is above this */
}

#include "include/parser.p4"

control FabricVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FabricIngress(inout headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    counter(PORTS, CounterType.packets_and_bytes) rx_port;
    counter(DROP_REASONS, CounterType.packets_and_bytes) drops;

    action drop(bit<8> reason) {
        meta.drop_reason = reason;
        drops.count((bit<32>)reason);
        mark_to_drop(standard_metadata);
    }

    action set_priority(bit<3> prio) {
        standard_metadata.priority = prio;
    }

    /* DSCP -> queue priority; the controller maps the trim DSCP to 7. */
    table dscp_priority {
        key = { hdr.ipv6.traffic_class: ternary; }
        actions = { set_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    /* uN: End with NEXT-CSID; the entry is this switch's locator fcbb:bb00:<uSID>::/48. */
    action usid_un() {
        meta.sid_kind = SID_UN;
        meta.psp = 0;
    }

    /* uN with PSP: as usid_un; at end of carrier the SRH End that empties the SRH pops it. */
    action usid_un_psp() {
        meta.sid_kind = SID_UN;
        meta.psp = 1;
    }

    action srv6_end() {
        meta.sid_kind = SID_END;
        meta.psp = 0;
    }

    action srv6_end_psp() {
        meta.sid_kind = SID_END;
        meta.psp = 1;
    }

    action srv6_end_x(port_t port, mac_addr_t dmac) {
        meta.sid_kind = SID_END_X;
        meta.psp = 0;
        meta.out_port = port;
        meta.nh_mac = dmac;
        meta.routed = 1;
    }

    action srv6_end_x_psp(port_t port, mac_addr_t dmac) {
        meta.sid_kind = SID_END_X;
        meta.psp = 1;
        meta.out_port = port;
        meta.nh_mac = dmac;
        meta.routed = 1;
    }

    /* This switch's SIDs. A miss means the DA is not mine: transit. */
    table my_sid {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = {
            usid_un;
            usid_un_psp;
            srv6_end;
            srv6_end_psp;
            srv6_end_x;
            srv6_end_x_psp;
            NoAction;
        }
        default_action = NoAction();
        size = 1024;
    }

    action fwd(port_t port, mac_addr_t dmac) {
        meta.out_port = port;
        meta.nh_mac = dmac;
        meta.routed = 1;
        meta.is_ua = 0;
    }

    /* uA: End.X with NEXT-CSID. Shift the uSID out and leave on this exact link. */
    action usid_ua(port_t port, mac_addr_t dmac) {
        meta.out_port = port;
        meta.nh_mac = dmac;
        meta.routed = 1;
        meta.is_ua = 1;
    }

    /*
     * Static uSID forwarding: block + active uSID (/48) of the DA -> port.
     * Neighbours' uN (fwd), this leaf's NIC local uSIDs (fwd, not shifted), this
     * switch's uA local uSIDs (usid_ua). Written once by the controller.
     */
    table usid_fwd {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { fwd; usid_ua; NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    /* Plain IPv6 routes for traffic outside the uSID plan. */
    table ipv6_route {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { fwd; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        rx_port.count((bit<32>)standard_metadata.ingress_port);
        meta.drop_reason = 0;
        meta.sid_kind = SID_NONE;
        meta.psp = 0;
        meta.is_ua = 0;
        meta.routed = 0;
        meta.out_port = 0;
        meta.nh_mac = 0;
        meta.trimmed = 0;

        if (standard_metadata.parser_error != error.NoError) {
            drop(DROP_PARSER_ERROR);
            return;
        }
        if (!hdr.ipv6.isValid()) {
            drop(DROP_NOT_IPV6);
            return;
        }
        if (standard_metadata.packet_length < 32w54 + (bit<32>)hdr.ipv6.payload_len) {
            drop(DROP_BAD_LENGTH);
            return;
        }

        dscp_priority.apply();
        my_sid.apply();

        bool do_end = false;     /* SRH End / End.X processing */
        bool do_shift = false;   /* uN: shift the carrier */
        if (meta.sid_kind == SID_UN) {
            if (hdr.ipv6.dst_addr[79:0] != 0) {
                do_shift = true;
            } else {
                do_end = true;   /* end of carrier: the SRH says what comes next */
            }
        } else if (meta.sid_kind == SID_END || meta.sid_kind == SID_END_X) {
            do_end = true;
        }

        if (do_end) {
            /* RFC 8986 4.1; with no SRH or SL == 0 the packet is for this node. */
            if (!hdr.srh.isValid()) {
                drop(DROP_NOT_FOR_ME);
                return;
            }
            if (hdr.srh.segments_left == 0) {
                drop(DROP_NOT_FOR_ME);
                return;
            }
            if (hdr.ipv6.hop_limit <= 1) {
                drop(DROP_HOP_LIMIT);
                return;
            }
            /* Unparsed: not type 4, Last Entry beyond Hdr Ext Len, or over the limits. */
            if (meta.prs.srh_parsed == 0) {
                drop(DROP_BAD_SRH);
                return;
            }
            if (hdr.srh.segments_left > hdr.srh.last_entry + 1) {
                drop(DROP_BAD_SRH);
                return;
            }
            hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
            hdr.srh.segments_left = hdr.srh.segments_left - 1;
            /* DA = Segment List[Segments Left]; SL <= Last Entry <= 7 here. */
            if (hdr.srh.segments_left == 0) {
                hdr.ipv6.dst_addr = hdr.srh_segments[0].sid;
            } else if (hdr.srh.segments_left == 1) {
                hdr.ipv6.dst_addr = hdr.srh_segments[1].sid;
            } else if (hdr.srh.segments_left == 2) {
                hdr.ipv6.dst_addr = hdr.srh_segments[2].sid;
            } else if (hdr.srh.segments_left == 3) {
                hdr.ipv6.dst_addr = hdr.srh_segments[3].sid;
            } else if (hdr.srh.segments_left == 4) {
                hdr.ipv6.dst_addr = hdr.srh_segments[4].sid;
            } else if (hdr.srh.segments_left == 5) {
                hdr.ipv6.dst_addr = hdr.srh_segments[5].sid;
            } else if (hdr.srh.segments_left == 6) {
                hdr.ipv6.dst_addr = hdr.srh_segments[6].sid;
            } else {
                hdr.ipv6.dst_addr = hdr.srh_segments[7].sid;
            }
            if (meta.psp == 1 && hdr.srh.segments_left == 0) {
                /* PSP (RFC 8986 4.16.1): the last segment needs no SRH; remove it. */
                hdr.ipv6.next_hdr = hdr.srh.next_hdr;
                hdr.ipv6.payload_len = hdr.ipv6.payload_len
                    - ((((bit<16>)hdr.srh.hdr_ext_len) << 3) + 8);
                hdr.srh.setInvalid();
                hdr.srh_segments[0].setInvalid();
                hdr.srh_segments[1].setInvalid();
                hdr.srh_segments[2].setInvalid();
                hdr.srh_segments[3].setInvalid();
                hdr.srh_segments[4].setInvalid();
                hdr.srh_segments[5].setInvalid();
                hdr.srh_segments[6].setInvalid();
                hdr.srh_segments[7].setInvalid();
                hdr.srh_tlvs[0].setInvalid();
                hdr.srh_tlvs[1].setInvalid();
                hdr.srh_tlvs[2].setInvalid();
                hdr.srh_tlvs[3].setInvalid();
                hdr.srh_tlvs[4].setInvalid();
                hdr.srh_tlvs[5].setInvalid();
                hdr.srh_tlvs[6].setInvalid();
                hdr.srh_tlvs[7].setInvalid();
                hdr.srh_tlvs[8].setInvalid();
                hdr.srh_tlvs[9].setInvalid();
                hdr.srh_tlvs[10].setInvalid();
                hdr.srh_tlvs[11].setInvalid();
                hdr.srh_tlvs[12].setInvalid();
                hdr.srh_tlvs[13].setInvalid();
                hdr.srh_tlvs[14].setInvalid();
                hdr.srh_tlvs[15].setInvalid();
            }
        } else {
            /* uN with a non-empty argument, or transit. */
            if (hdr.ipv6.hop_limit <= 1) {
                drop(DROP_HOP_LIMIT);
                return;
            }
            hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
            if (do_shift) {
                /* Shift the argument into place; the block stays. */
                hdr.ipv6.dst_addr = hdr.ipv6.dst_addr[127:96] ++ hdr.ipv6.dst_addr[79:0] ++ 16w0;
            }
        }

        /* End.X chose its adjacency; everything else looks the (new) DA up. */
        if (meta.routed == 0) {
            if (usid_fwd.apply().hit) {
                if (meta.is_ua == 1) {
                    if (hdr.ipv6.dst_addr[79:0] == 0) {
                        /* uA at the end of the carrier: nothing to send on. */
                        drop(DROP_NOT_FOR_ME);
                        return;
                    }
                    hdr.ipv6.dst_addr = hdr.ipv6.dst_addr[127:96] ++ hdr.ipv6.dst_addr[79:0] ++ 16w0;
                }
            } else if (!ipv6_route.apply().hit) {
                if (hdr.ipv6.dst_addr[127:96] == USID_BLOCK) {
                    drop(DROP_UNKNOWN_USID);
                } else {
                    drop(DROP_NO_ROUTE);
                }
                return;
            }
        }
        standard_metadata.egress_spec = meta.out_port;
    }
}

control FabricEgress(inout headers_t hdr,
               inout metadata_t meta,
               inout standard_metadata_t standard_metadata) {

    counter(PORTS, CounterType.packets_and_bytes) tx_port;
    counter(PORTS, CounterType.packets_and_bytes) trimmed;
    counter(PORTS, CounterType.packets_and_bytes) ecn_marked;
    counter(DROP_REASONS, CounterType.packets_and_bytes) drops;
    /* Per port: the deepest queue (packets, enq_qdepth) any packet found at
     * enqueue since the register was last written; read and reset over
     * P4Runtime (a RegisterEntry MODIFY to 0). */
    register<bit<32>>(PORTS) max_qdepth;

    action set_src_mac(mac_addr_t mac) {
        hdr.ethernet.src_addr = mac;
    }

    /* Each port's own MAC: the Ethernet source of everything it sends. */
    table port_mac {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_src_mac; NoAction; }
        default_action = NoAction();
        size = PORTS;
    }

    action set_trim(bit<19> threshold, bit<6> dscp) {
        meta.trim_enabled = 1;
        meta.trim_threshold = threshold;
        meta.trim_dscp = dscp;
    }

    /* Per-port trimming: queue depth threshold (packets) and the trim DSCP. */
    table trim_config {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_trim; NoAction; }
        default_action = NoAction();
        size = PORTS;
    }

    action set_trimmable() {
        meta.trim_class = 1;
    }

    /* The traffic classes trimming applies to, by the outer DSCP (the NIC copies
     * the host's): entries `dscp << 2 &&& 0xFC -> set_trimmable()`. A miss
     * leaves the packet whole: it queues, and the full queue tail-drops it. */
    table trim_class {
        key = { hdr.ipv6.traffic_class: ternary; }
        actions = { set_trimmable; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    action set_ecn(bit<19> threshold) {
        meta.ecn_enabled = 1;
        meta.ecn_threshold = threshold;
    }

    /* Per-port ECN marking: the queue depth (packets) above which ECN-capable
     * packets leave with CE. */
    table ecn_config {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_ecn; NoAction; }
        default_action = NoAction();
        size = PORTS;
    }

    apply {
        if (!port_mac.apply().hit) {
            meta.drop_reason = DROP_NO_PORT_MAC;
            drops.count((bit<32>)DROP_NO_PORT_MAC);
            mark_to_drop(standard_metadata);
            return;
        }
        hdr.ethernet.dst_addr = meta.nh_mac;

        bit<32> deepest;
        max_qdepth.read(deepest, (bit<32>)standard_metadata.egress_port);
        if ((bit<32>)standard_metadata.enq_qdepth > deepest) {
            max_qdepth.write((bit<32>)standard_metadata.egress_port, (bit<32>)standard_metadata.enq_qdepth);
        }

        meta.trim_enabled = 0;
        meta.trimmed = 0;
        trim_config.apply();
        meta.trim_class = 0;
        /*
         * v1model learns the queue depth only here (enq_qdepth: the depth the
         * packet found at enqueue). Trim MRC-lite data of a trimmable traffic
         * class whose UDP checksum can be recomputed from headers alone: UDP
         * after an inner IPv6 header, or after the outer one with no SRH in
         * between. The class is looked up only for data over the threshold.
         */
        if (meta.trim_enabled == 1 && hdr.reth.isValid()
                && (bit<32>)standard_metadata.enq_qdepth > (bit<32>)meta.trim_threshold
                && (hdr.inner_ipv6.isValid() || !hdr.srh.isValid())) {
            trim_class.apply();
        }
        if (meta.trim_class == 1) {
            bit<16> l4_len = 16w36;   /* UDP 8 + BTH 12 + RETH 16 */
            if (hdr.immdt.isValid()) {
                l4_len = 16w40;
            }
            hdr.udp.length = l4_len;
            bit<16> outer_payload = l4_len;
            if (hdr.inner_ipv6.isValid()) {
                hdr.inner_ipv6.payload_len = l4_len;
                outer_payload = l4_len + 16w40;
                if (hdr.srh.isValid()) {
                    outer_payload = outer_payload + ((((bit<16>)hdr.srh.hdr_ext_len) << 3) + 8);
                }
            }
            hdr.ipv6.payload_len = outer_payload;
            hdr.ipv6.traffic_class = meta.trim_dscp ++ hdr.ipv6.traffic_class[1:0];
            truncate(32w54 + (bit<32>)outer_payload);
            meta.trimmed = 1;
            trimmed.count((bit<32>)standard_metadata.egress_port);
        }
        /*
         * ECN (RFC 3168): an ECN-capable packet (ECT(0) or ECT(1) in the outer
         * traffic class) that found the queue above the port's threshold leaves
         * with CE. A trimmed packet is left as it is: its trim NACK already tells
         * the sender of the congestion. Only the traffic class changes: no
         * checksum covers the IPv6 header.
         */
        meta.ecn_enabled = 0;
        ecn_config.apply();
        if (meta.ecn_enabled == 1 && meta.trimmed == 0
                && (bit<32>)standard_metadata.enq_qdepth > (bit<32>)meta.ecn_threshold
                && (hdr.ipv6.traffic_class[1:0] == 2w1 || hdr.ipv6.traffic_class[1:0] == 2w2)) {
            hdr.ipv6.traffic_class = hdr.ipv6.traffic_class[7:2] ++ 2w3;
            ecn_marked.count((bit<32>)standard_metadata.egress_port);
        }
        tx_port.count((bit<32>)standard_metadata.egress_port);
    }
}

/*
 * A trimmed packet has no payload left, so its UDP checksum is a checksum over
 * headers only: the IPv6 pseudo-header of the header right before UDP, the UDP
 * header with checksum 0, BTH, RETH and (WRITE with immediate) IMMDT.
 */
#define MRC_DATA_HEADER_FIELDS \
    hdr.bth.opcode, hdr.bth.solicited, hdr.bth.mig_req, hdr.bth.pad_count, \
    hdr.bth.tver, hdr.bth.pkey, hdr.bth.fecn, hdr.bth.becn, hdr.bth.resv6, \
    hdr.bth.dest_qp, hdr.bth.ack_req, hdr.bth.resv7, hdr.bth.psn, \
    hdr.reth.vaddr, hdr.reth.rkey, hdr.reth.dma_len

control FabricComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(meta.trimmed == 1 && hdr.inner_ipv6.isValid() && !hdr.immdt.isValid(),
            { hdr.inner_ipv6.src_addr, hdr.inner_ipv6.dst_addr,
              16w0, hdr.udp.length, 24w0, IP_PROTO_UDP,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0,
              MRC_DATA_HEADER_FIELDS },
            hdr.udp.checksum, HashAlgorithm.csum16);
        update_checksum(meta.trimmed == 1 && hdr.inner_ipv6.isValid() && hdr.immdt.isValid(),
            { hdr.inner_ipv6.src_addr, hdr.inner_ipv6.dst_addr,
              16w0, hdr.udp.length, 24w0, IP_PROTO_UDP,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0,
              MRC_DATA_HEADER_FIELDS, hdr.immdt.imm },
            hdr.udp.checksum, HashAlgorithm.csum16);
        update_checksum(meta.trimmed == 1 && !hdr.inner_ipv6.isValid() && !hdr.immdt.isValid(),
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.udp.length, 24w0, IP_PROTO_UDP,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0,
              MRC_DATA_HEADER_FIELDS },
            hdr.udp.checksum, HashAlgorithm.csum16);
        update_checksum(meta.trimmed == 1 && !hdr.inner_ipv6.isValid() && hdr.immdt.isValid(),
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.udp.length, 24w0, IP_PROTO_UDP,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0,
              MRC_DATA_HEADER_FIELDS, hdr.immdt.imm },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

V1Switch(MrcParser(),
         FabricVerifyChecksum(),
         FabricIngress(),
         FabricEgress(),
         FabricComputeChecksum(),
         MrcDeparser()) main;
