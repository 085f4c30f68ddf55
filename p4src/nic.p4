/*
 * nic.p4: the MRC NIC dataplane (one per host), P4_16 for v1model.
 *
 * One host port and one port per plane. See docs/nic.md for the behaviour, the
 * tables the controller writes and the counters it reads; docs/addressing.md for
 * the address plan and the EV bit layout this program follows.
 *
 *   host -> fabric  MRC (UDP dst 4791): EV = BTH pkey.
 *                     EXPLICIT mode: NicIngress.ev_table (dst prefix, EV) -> path.
 *                     GENERATED mode: carrier computed from EV bits (plane, spine),
 *                     the destination address (leaf, port) and per-plane constants.
 *                   unknown EVs and other traffic: NicIngress.spray (action selector,
 *                     per packet or per flow by NicIngress.spray_mode, watch ports).
 *                   H.Encaps.Red: outer IPv6, carrier in the DA, SRH only when a
 *                     path needs a second carrier.
 *                   neighbour solicitations and pings for the gateway address:
 *                     answered here.
 *   fabric -> host  my local uSID at the end of the carrier: decapsulate, carry a
 *                   trim mark into the inner traffic class, deliver.
 */

#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"

/* What ingress decides and remembers per packet. */
struct metadata_t {
    parser_metadata_t prs;       // required by the shared parser
    bit<2>   role;               // ROLE_*: which kind of port the packet came in on
    bit<1>   dropped;
    bit<128> nic_addr;           // host port: this NIC's own (outer source) address
    bit<128> gw_addr;            // host port: the host's gateway address
    bit<48>  gw_mac;             // host port: the MAC the gateway answers with
    bit<1>   is_mrc;
    bit<16>  ev;
    bit<1>   ev_mode;
    bit<1>   path_found;
    bit<1>   need_gen;
    bit<1>   gen_ok;
    bit<3>   plane;
    bit<8>   spine;
    bit<9>   out_port;
    bit<128> carrier;
    bit<128> next_carrier;
    bit<1>   use_srh;
    bit<16>  leaf_base;
    bit<16>  spine_base;
    bit<16>  leaf_count;
    bit<16>  spine_count;
    bit<16>  my_leaf;
    bit<16>  dst_leaf;
    bit<16>  dst_port;
    bit<32>  spray_key;          // selector input: per-packet sequence or flow hash
    bit<32>  flow_hash;          // selector input and non-MRC outer flow label
    bit<16>  l4_src_port;
    bit<16>  l4_dst_port;
    bit<1>   is_my_sid;
    bit<9>   host_port;
    bit<6>   trim_dscp;
    bit<16>  srh_bytes;
    bit<1>   echo_reply;         // the gateway answers a ping: checksum over the payload
}

#include "include/parser.p4"

/* Drop reasons: index of NicIngress.drops / NicEgress.drops (documented in docs/nic.md). */
const bit<8> DROP_PARSE_ERROR     = 1;   // truncated or malformed headers
const bit<8> DROP_UNKNOWN_PORT    = 2;   // ingress port not in NicIngress.port_role
const bit<8> DROP_NOT_IPV6        = 3;   // non-IPv6 frame
const bit<8> DROP_BAD_LENGTH      = 4;   // IPv6 payload length disagrees with the frame
const bit<8> DROP_HOST_MULTICAST  = 5;   // multicast from the host (MLD, RS, ...)
const bit<8> DROP_NDP             = 6;   // NDP we do not answer, or malformed NDP
const bit<8> DROP_BAD_CHECKSUM    = 7;   // ICMPv6 checksum of a solicitation wrong
const bit<8> DROP_NO_PATH         = 8;   // no spray entry / no live member for the destination
const bit<8> DROP_GEN_BAD_EV      = 9;   // GENERATED: EV names no plane / spine out of range
const bit<8> DROP_GEN_BAD_DST     = 10;  // GENERATED: destination outside the host plan
const bit<8> DROP_NOT_MY_SID      = 11;  // from the fabric, active uSID is not mine
const bit<8> DROP_SID_NOT_END     = 12;  // my uSID but more segments follow
const bit<8> DROP_NOT_ENCAPSULATED = 13; // my uSID but no inner IPv6 packet
const bit<8> DROP_NO_EGRESS_PORT  = 14;  // egress port not in NicEgress.egress_port
const bit<8> DROP_HOST_LOOP       = 15;  // encapsulated packet arriving from the host
const bit<8> DROP_FOR_GATEWAY     = 16;  // to the gateway address, not an echo request
const bit<8> DROP_HOST_SOURCE     = 17;  // from the host, source outside the host's /64

const bit<2> ROLE_NONE  = 0;
const bit<2> ROLE_HOST  = 1;
const bit<2> ROLE_PLANE = 2;

const bit<1> MODE_EXPLICIT  = 0;
const bit<1> MODE_GENERATED = 1;

const bit<32>  USID_BLOCK      = 0xfcbbbb00;   // fcbb:bb00::/32
const bit<32>  HOST_BLOCK      = 0xfd000000;   // hosts: fd00:0:<leaf>:<port>::/64
const bit<16>  LOCAL_USID_BASE = 0xe000;       // NIC on leaf port n: 0xE000 + n
const bit<8>   OUTER_HOP_LIMIT = 64;
const bit<8>   NDP_HOP_LIMIT   = 255;
const bit<16>  IPV6_HEADER_BYTES = 40;
const bit<16>  SRH_ONE_SEGMENT_BYTES = 24;     // 8 fixed + one 16-byte segment
const bit<16>  NDP_NA_BYTES    = 32;           // ICMPv6 4 + flags 4 + target 16 + option 8
const bit<16>  NDP_NS_BYTES    = 24;           // a solicitation without options
const bit<32>  ETH_IPV6_BYTES  = 54;           // Ethernet 14 + IPv6 40
const bit<8>   ICMPV6_TYPE_RS  = 133;          // first NDP type (router solicitation)
const bit<8>   ICMPV6_TYPE_REDIRECT = 137;     // last NDP type
const bit<8>   ICMPV6_TYPE_ECHO_REQUEST = 128;
const bit<8>   ICMPV6_TYPE_ECHO_REPLY = 129;
const bit<32>  NA_FLAGS_RSO    = 0xe0000000;   // Router, Solicited, Override

control NicVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* ICMPv6 checksum of a neighbour solicitation: pseudo-header (RFC 8200 8.1)
         * then the message with the checksum field left out (it counts as zero). */
        verify_checksum(hdr.ndp.isValid() && hdr.ndp_option.isValid(),
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.ipv6.payload_len, 24w0, IP_PROTO_ICMPV6,
              hdr.icmpv6.type, hdr.icmpv6.code,
              hdr.ndp.flags, hdr.ndp.target_addr,
              hdr.ndp_option.type, hdr.ndp_option.length, hdr.ndp_option.lladdr },
            hdr.icmpv6.checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.ndp.isValid() && !hdr.ndp_option.isValid(),
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.ipv6.payload_len, 24w0, IP_PROTO_ICMPV6,
              hdr.icmpv6.type, hdr.icmpv6.code,
              hdr.ndp.flags, hdr.ndp.target_addr },
            hdr.icmpv6.checksum, HashAlgorithm.csum16);
        /* An echo request (to the gateway, if ingress answers it). */
        verify_checksum_with_payload(
            hdr.icmpv6.isValid() && hdr.icmpv6.type == ICMPV6_TYPE_ECHO_REQUEST,
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.ipv6.payload_len, 24w0, IP_PROTO_ICMPV6,
              hdr.icmpv6.type, hdr.icmpv6.code },
            hdr.icmpv6.checksum, HashAlgorithm.csum16);
    }
}

control NicIngress(inout headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    counter(32, CounterType.packets) drops;
    counter(65536, CounterType.packets_and_bytes) ev_tx;
    counter(65536, CounterType.packets_and_bytes) ev_rx;
    counter(8, CounterType.packets_and_bytes) plane_rx;
    register<bit<32>>(1) spray_seq;

    action drop_with(bit<8> reason) {
        mark_to_drop(standard_metadata);
        meta.dropped = 1;
        drops.count((bit<32>)reason);
    }

    /* ---- port roles ------------------------------------------------------ */

    action host_port(bit<128> nic_addr, bit<128> gw_addr, bit<48> gw_mac) {
        meta.role = ROLE_HOST;
        meta.nic_addr = nic_addr;
        meta.gw_addr = gw_addr;
        meta.gw_mac = gw_mac;
    }
    action plane_port(bit<3> plane) {
        meta.role = ROLE_PLANE;
        meta.plane = plane;
    }
    action unknown_port() {
        meta.role = ROLE_NONE;
    }
    table port_role {
        key = { standard_metadata.ingress_port: exact; }
        actions = { host_port; plane_port; unknown_port; }
        default_action = unknown_port();
        size = 16;
    }

    /* ---- path choice (host -> fabric) ------------------------------------ */

    /* A whole carrier chosen by the controller (EXPLICIT EV or a spray member). */
    action set_path(bit<9> port, bit<3> plane, bit<128> carrier) {
        meta.path_found = 1;
        meta.out_port = port;
        meta.plane = plane;
        meta.carrier = carrier;
        meta.use_srh = 0;
    }
    /* A path longer than one carrier: the second carrier goes into an SRH. */
    action set_path_srh(bit<9> port, bit<3> plane, bit<128> carrier, bit<128> next_carrier) {
        meta.path_found = 1;
        meta.out_port = port;
        meta.plane = plane;
        meta.carrier = carrier;
        meta.next_carrier = next_carrier;
        meta.use_srh = 1;
    }
    /* (plane, spine) only: the carrier is generated from the destination address. */
    action set_generated(bit<3> plane, bit<8> spine) {
        meta.path_found = 1;
        meta.need_gen = 1;
        meta.plane = plane;
        meta.spine = spine;
    }
    action no_path() {
        meta.path_found = 0;
    }

    action mode_explicit() {
        meta.ev_mode = MODE_EXPLICIT;
    }
    action mode_generated() {
        meta.ev_mode = MODE_GENERATED;
    }
    /* EV mode per destination prefix (one entry covers every host). */
    table ev_mode {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { mode_explicit; mode_generated; }
        default_action = mode_explicit();
        size = 64;
    }

    /* EXPLICIT mode: the controller's EV list. */
    table ev_table {
        key = {
            hdr.ipv6.dst_addr: lpm;
            meta.ev: exact;
        }
        actions = { set_path; set_path_srh; set_generated; no_path; }
        default_action = no_path();
        size = 16384;
    }

    /* GENERATED mode: per-plane constants (docs/addressing.md). */
    action gen_params(bit<9> port, bit<16> leaf_base, bit<16> spine_base,
                      bit<16> leaf_count, bit<16> spine_count, bit<16> my_leaf) {
        meta.gen_ok = 1;
        meta.out_port = port;
        meta.leaf_base = leaf_base;
        meta.spine_base = spine_base;
        meta.leaf_count = leaf_count;
        meta.spine_count = spine_count;
        meta.my_leaf = my_leaf;
    }
    action gen_no_plane() {
        meta.gen_ok = 0;
    }
    table gen_plane {
        key = { meta.plane: exact; }
        actions = { gen_params; gen_no_plane; }
        default_action = gen_no_plane();
        size = 8;
    }

    /* Spray key: a per-packet sequence number (consecutive packets take
     * consecutive live members) or the flow hash (a flow stays on one member). */
    action spray_per_packet() {
        spray_seq.read(meta.spray_key, 0);
        spray_seq.write(0, meta.spray_key + 1);
    }
    /* The flow hash is a CRC, linear over GF(2): the selector takes spray_key %
     * (live members), and with a power-of-two member count those low bits can stay
     * the same over a structured set of flows (16 consecutive UDP source ports give
     * CRC values with the same two low bits: one member of 2, four of 8). A
     * multiply and xor-shifts (nonlinear) bring every bit of the hash into the low ones. */
    action spray_per_flow() {
        meta.spray_key = meta.flow_hash ^ (meta.flow_hash >> 16);
        meta.spray_key = meta.spray_key * 32w0x45d9f3b;
        meta.spray_key = meta.spray_key ^ (meta.spray_key >> 16);
    }
    table spray_mode {
        key = {
            meta.is_mrc: ternary;
            hdr.ipv6.traffic_class: ternary;
            hdr.ipv6.next_hdr: ternary;
        }
        actions = { spray_per_packet; spray_per_flow; }
        default_action = spray_per_flow();
        size = 64;
    }

    /* The NIC's own spraying: members are paths (set_generated(plane, spine) for
     * any destination, or whole carriers), groups list them with the plane port as
     * watch port, so a plane port that goes down is skipped by the dataplane. Up to
     * 8 planes x 256 spines members. The identity hash makes the choice
     * spray_key % (live members): exact round robin per packet, and the mixed
     * flow hash's spread per flow (a CRC over a sequence number would repeat
     * patterns and leave members idle). */
    action_selector(HashAlgorithm.identity, 32w4096, 32w32) spray_selector;

    table spray {
        key = {
            hdr.ipv6.dst_addr: lpm;
            meta.spray_key: selector;
        }
        actions = { set_path; set_path_srh; set_generated; no_path; }
        /* No default_action: BMv2 ignores one on a table with a selector (p4c-bm2-ss
         * warns). A miss runs NoAction and leaves meta.path_found 0 (spray is applied
         * only then), so the packet is dropped with DROP_NO_PATH below. */
        implementation = spray_selector;
        size = 1024;
    }

    /* ---- fabric -> host --------------------------------------------------- */

    action decap_to_host(bit<9> port, bit<6> trim_dscp) {
        meta.is_my_sid = 1;
        meta.host_port = port;
        meta.trim_dscp = trim_dscp;
    }
    action not_my_sid() {
        meta.is_my_sid = 0;
    }
    /* This NIC's local uSID locator fcbb:bb00:<0xE000+n>::/48. */
    table my_sid {
        key = { hdr.ipv6.dst_addr: lpm; }
        actions = { decap_to_host; not_my_sid; }
        default_action = not_my_sid();
        size = 4;
    }

    /* ---- pieces of the apply block --------------------------------------- */

    action encap_outer(bit<20> flow_label) {
        hdr.inner_ipv6 = hdr.ipv6;
        hdr.ipv6.version = 6;
        hdr.ipv6.traffic_class = hdr.inner_ipv6.traffic_class;
        hdr.ipv6.flow_label = flow_label;
        hdr.ipv6.payload_len = hdr.inner_ipv6.payload_len + IPV6_HEADER_BYTES;
        hdr.ipv6.next_hdr = IP_PROTO_IPV6;
        hdr.ipv6.hop_limit = OUTER_HOP_LIMIT;
        hdr.ipv6.src_addr = meta.nic_addr;
        hdr.ipv6.dst_addr = meta.carrier;
        standard_metadata.egress_spec = meta.out_port;
    }

    /* Reduced SRH (RFC 8986 H.Encaps.Red): the first carrier is only in the DA,
     * the SRH holds the one that follows; Segments Left 1, Last Entry 0. */
    action add_srh() {
        hdr.srh.setValid();
        hdr.srh.next_hdr = IP_PROTO_IPV6;
        hdr.srh.hdr_ext_len = 2;
        hdr.srh.routing_type = SRH_ROUTING_TYPE;
        hdr.srh.segments_left = 1;
        hdr.srh.last_entry = 0;
        hdr.srh.flags = 0;
        hdr.srh.tag = 0;
        hdr.srh_segments[0].setValid();
        hdr.srh_segments[0].sid = meta.next_carrier;
        hdr.ipv6.next_hdr = IP_PROTO_ROUTING;
        hdr.ipv6.payload_len = hdr.ipv6.payload_len + SRH_ONE_SEGMENT_BYTES;
    }

    /* Neighbour advertisement for the gateway, built in place of the solicitation. */
    action answer_solicitation() {
        hdr.ipv6.traffic_class = 0;
        hdr.ipv6.flow_label = 0;
        hdr.ipv6.payload_len = NDP_NA_BYTES;
        hdr.ipv6.hop_limit = NDP_HOP_LIMIT;
        hdr.ipv6.dst_addr = hdr.ipv6.src_addr;
        hdr.ipv6.src_addr = meta.gw_addr;
        hdr.icmpv6.type = ICMPV6_TYPE_NA;
        hdr.icmpv6.code = 0;
        hdr.ndp.flags = NA_FLAGS_RSO;
        hdr.ndp.target_addr = meta.gw_addr;
        hdr.ndp_option.setValid();
        hdr.ndp_option.type = NDP_OPT_TARGET_LLADDR;
        hdr.ndp_option.length = 1;
        hdr.ndp_option.lladdr = meta.gw_mac;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    /* The gateway answers pings, so `ping <gateway>` checks the host's first hop. */
    action answer_echo() {
        hdr.ipv6.traffic_class = 0;
        hdr.ipv6.flow_label = 0;
        hdr.ipv6.hop_limit = OUTER_HOP_LIMIT;
        hdr.ipv6.dst_addr = hdr.ipv6.src_addr;
        hdr.ipv6.src_addr = meta.gw_addr;
        hdr.icmpv6.type = ICMPV6_TYPE_ECHO_REPLY;
        meta.echo_reply = 1;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    action flow_hash() {
        hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
             { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.flow_label,
               hdr.ipv6.next_hdr, meta.l4_src_port, meta.l4_dst_port },
             32w0xffffffff);
    }

    action decapsulate() {
        hdr.ipv6.setInvalid();
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
        standard_metadata.egress_spec = meta.host_port;
    }

    apply {
        if (standard_metadata.parser_error != error.NoError) {
            drop_with(DROP_PARSE_ERROR);
        } else {
            port_role.apply();
        }

        if (meta.dropped == 1) {
            // already counted
        } else if (meta.role == ROLE_HOST) {
            /* ------------------------------ host -> fabric ---------------- */
            if (!hdr.ipv6.isValid()) {
                drop_with(DROP_NOT_IPV6);
            } else if (standard_metadata.packet_length
                       < ETH_IPV6_BYTES + (bit<32>)hdr.ipv6.payload_len) {
                drop_with(DROP_BAD_LENGTH);
            } else if (hdr.icmpv6.isValid() && hdr.icmpv6.type >= ICMPV6_TYPE_RS
                       && hdr.icmpv6.type <= ICMPV6_TYPE_REDIRECT) {
                /* Neighbour discovery: answer solicitations for the gateway only. */
                if (standard_metadata.checksum_error == 1) {
                    drop_with(DROP_BAD_CHECKSUM);
                } else if (hdr.ndp.isValid()
                        && hdr.icmpv6.type == ICMPV6_TYPE_NS
                        && hdr.icmpv6.code == 0
                        && hdr.ipv6.hop_limit == NDP_HOP_LIMIT
                        && hdr.ndp.target_addr == meta.gw_addr
                        && hdr.ipv6.src_addr != 0
                        && (hdr.ipv6.payload_len == NDP_NS_BYTES
                            || hdr.ipv6.payload_len == NDP_NA_BYTES)
                        && (!hdr.ndp_option.isValid()
                            || (hdr.ndp_option.type == NDP_OPT_SOURCE_LLADDR
                                && hdr.ndp_option.length == 1))) {
                    answer_solicitation();
                } else {
                    drop_with(DROP_NDP);
                }
            } else if (hdr.ipv6.dst_addr[127:120] == 0xff) {
                drop_with(DROP_HOST_MULTICAST);
            } else if (hdr.ipv6.dst_addr == meta.gw_addr) {
                if (hdr.icmpv6.isValid() && hdr.icmpv6.type == ICMPV6_TYPE_ECHO_REQUEST
                        && hdr.icmpv6.code == 0
                        && standard_metadata.checksum_error == 0
                        && standard_metadata.packet_length
                           == ETH_IPV6_BYTES + (bit<32>)hdr.ipv6.payload_len) {
                    answer_echo();
                } else {
                    drop_with(DROP_FOR_GATEWAY);
                }
            } else if (hdr.ipv6.src_addr[127:64] != meta.gw_addr[127:64]) {
                /* Only the host's own prefix is routed back to it. */
                drop_with(DROP_HOST_SOURCE);
            } else if (hdr.inner_ipv6.isValid() || hdr.srh.isValid()) {
                drop_with(DROP_HOST_LOOP);
            } else {
                if (hdr.udp.isValid()) {
                    meta.l4_src_port = hdr.udp.src_port;
                    meta.l4_dst_port = hdr.udp.dst_port;
                    if (hdr.bth.isValid()) {
                        /* The EV travels in the BTH's pkey (docs/packet-formats.md):
                         * a host may send a run of packets in one segmentation
                         * offload, whose UDP headers are all alike. */
                        meta.is_mrc = 1;
                        meta.ev = hdr.bth.pkey;
                    }
                }
                flow_hash();
                if (meta.is_mrc == 1) {
                    ev_mode.apply();
                    if (meta.ev_mode == MODE_GENERATED) {
                        meta.path_found = 1;
                        meta.need_gen = 1;
                        meta.plane = meta.ev[15:13];
                        meta.spine = meta.ev[12:5];
                    } else {
                        ev_table.apply();
                    }
                }
                if (meta.path_found == 0) {
                    spray_mode.apply();
                    spray.apply();
                }

                if (meta.path_found == 0) {
                    drop_with(DROP_NO_PATH);
                } else if (meta.need_gen == 1) {
                    gen_plane.apply();
                    meta.dst_leaf = hdr.ipv6.dst_addr[95:80];
                    meta.dst_port = hdr.ipv6.dst_addr[79:64];
                    if (meta.gen_ok == 0 || (bit<16>)meta.spine >= meta.spine_count) {
                        drop_with(DROP_GEN_BAD_EV);
                    } else if (hdr.ipv6.dst_addr[127:96] != HOST_BLOCK
                               || meta.dst_leaf >= meta.leaf_count
                               || meta.dst_port == 0 || meta.dst_port > 4095) {
                        drop_with(DROP_GEN_BAD_DST);
                    } else if (meta.dst_leaf == meta.my_leaf) {
                        meta.carrier = USID_BLOCK
                            ++ (meta.leaf_base + meta.my_leaf)
                            ++ (LOCAL_USID_BASE + meta.dst_port)
                            ++ 64w0;
                    } else {
                        meta.carrier = USID_BLOCK
                            ++ (meta.leaf_base + meta.my_leaf)
                            ++ (meta.spine_base + (bit<16>)meta.spine)
                            ++ (meta.leaf_base + meta.dst_leaf)
                            ++ (LOCAL_USID_BASE + meta.dst_port)
                            ++ 32w0;
                    }
                }

                if (meta.dropped == 0) {
                    if (meta.is_mrc == 1) {
                        encap_outer((bit<20>)meta.ev);
                        ev_tx.count((bit<32>)meta.ev);
                    } else {
                        encap_outer(meta.flow_hash[19:0]);
                    }
                    if (meta.use_srh == 1) {
                        add_srh();
                    }
                }
            }
        } else if (meta.role == ROLE_PLANE) {
            /* ------------------------------ fabric -> host ---------------- */
            plane_rx.count((bit<32>)meta.plane);
            if (!hdr.ipv6.isValid()) {
                drop_with(DROP_NOT_IPV6);
            } else if (standard_metadata.packet_length
                       < ETH_IPV6_BYTES + (bit<32>)hdr.ipv6.payload_len) {
                drop_with(DROP_BAD_LENGTH);
            } else {
                if (hdr.srh.isValid()) {
                    meta.srh_bytes = ((bit<16>)hdr.srh.hdr_ext_len << 3) + 8;
                }
                my_sid.apply();
                if (meta.is_my_sid == 0) {
                    drop_with(DROP_NOT_MY_SID);
                } else if (hdr.ipv6.dst_addr[79:0] != 0
                           || (hdr.srh.isValid() && hdr.srh.segments_left != 0)) {
                    drop_with(DROP_SID_NOT_END);
                } else if (!hdr.inner_ipv6.isValid()
                           || (hdr.srh.isValid() && meta.prs.srh_parsed == 0)) {
                    drop_with(DROP_NOT_ENCAPSULATED);
                } else if (hdr.ipv6.payload_len != meta.srh_bytes + IPV6_HEADER_BYTES
                                                   + hdr.inner_ipv6.payload_len) {
                    drop_with(DROP_BAD_LENGTH);
                } else {
                    /* A trimmed packet keeps its mark: the outer DSCP set by the
                     * congested switch goes into the inner traffic class. */
                    if (hdr.ipv6.traffic_class[7:2] == meta.trim_dscp) {
                        hdr.inner_ipv6.traffic_class =
                            ((bit<8>)meta.trim_dscp << 2)
                            | (hdr.inner_ipv6.traffic_class & 8w0x03);
                    }
                    /* Congestion experienced on the way (RFC 6040, normal mode):
                     * an outer CE reaches the host on an ECN-capable inner packet. */
                    if (hdr.ipv6.traffic_class[1:0] == 2w3
                            && hdr.inner_ipv6.traffic_class[1:0] != 2w0) {
                        hdr.inner_ipv6.traffic_class[1:0] = 2w3;
                    }
                    if (hdr.bth.isValid()) {
                        ev_rx.count((bit<32>)hdr.bth.pkey);
                    }
                    decapsulate();
                }
            }
        } else {
            drop_with(DROP_UNKNOWN_PORT);
        }
    }
}

control NicEgress(inout headers_t hdr, inout metadata_t meta,
               inout standard_metadata_t standard_metadata) {

    counter(32, CounterType.packets) drops;
    counter(8, CounterType.packets_and_bytes) plane_tx;

    /* Every egress writes the port's MAC as source and the neighbour's as
     * destination (docs/addressing.md, MACs). */
    action to_plane(bit<3> plane, bit<48> src_mac, bit<48> dst_mac) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        plane_tx.count((bit<32>)plane);
    }
    action to_host(bit<48> src_mac, bit<48> dst_mac) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }
    action no_egress_port() {
        mark_to_drop(standard_metadata);
        drops.count((bit<32>)DROP_NO_EGRESS_PORT);
    }
    table egress_port {
        key = { standard_metadata.egress_port: exact; }
        actions = { to_plane; to_host; no_egress_port; }
        default_action = no_egress_port();
        size = 16;
    }

    apply {
        egress_port.apply();
    }
}

control NicComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* The neighbour advertisement we built (always with the target link-layer
         * address option). */
        update_checksum(hdr.ndp.isValid() && hdr.ndp_option.isValid(),
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.ipv6.payload_len, 24w0, IP_PROTO_ICMPV6,
              hdr.icmpv6.type, hdr.icmpv6.code,
              hdr.ndp.flags, hdr.ndp.target_addr,
              hdr.ndp_option.type, hdr.ndp_option.length, hdr.ndp_option.lladdr },
            hdr.icmpv6.checksum, HashAlgorithm.csum16);
        /* An echo reply: the echo body (identifier, sequence, data) is payload. */
        update_checksum_with_payload(meta.echo_reply == 1,
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
              16w0, hdr.ipv6.payload_len, 24w0, IP_PROTO_ICMPV6,
              hdr.icmpv6.type, hdr.icmpv6.code },
            hdr.icmpv6.checksum, HashAlgorithm.csum16);
    }
}

V1Switch(MrcParser(), NicVerifyChecksum(), NicIngress(), NicEgress(),
         NicComputeChecksum(), MrcDeparser()) main;
