/*
 * headers.p4: the header types shared by fabric.p4 and nic.p4.
 *
 * Why one file: the fabric switches and the NICs parse the same wire format
 * (docs/addressing.md, docs/packet-formats.md), so the header layouts, the
 * protocol constants and the limits live in one place. Names here are stable:
 * controllers and tests refer to them (hdr.ipv6.dst_addr, ...).
 *
 * Only P4_16 core / v1model constructs are used, so p4c-bm2-ss accepts the file.
 */
#ifndef MRC_HEADERS_P4
#define MRC_HEADERS_P4

/* ---- Protocol constants ------------------------------------------------- */

const bit<16> ETHERTYPE_IPV6 = 0x86DD;

const bit<8> IP_PROTO_HOPOPT = 0;    /* IPv6 hop-by-hop options */
const bit<8> IP_PROTO_UDP = 17;
const bit<8> IP_PROTO_IPV6 = 41;     /* IPv6 in IPv6 (H.Encaps) */
const bit<8> IP_PROTO_ROUTING = 43;  /* IPv6 routing header (SRH is type 4) */
const bit<8> IP_PROTO_ICMPV6 = 58;
const bit<8> IP_PROTO_NONXT = 59;

const bit<8> SRH_ROUTING_TYPE = 4;   /* RFC 8754 */

const bit<16> UDP_PORT_MRC = 4791;   /* RoCEv2 port, used by MRC-lite */

const bit<8> ICMPV6_TYPE_NS = 135;   /* neighbour solicitation */
const bit<8> ICMPV6_TYPE_NA = 136;   /* neighbour advertisement */
const bit<8> NDP_OPT_SOURCE_LLADDR = 1;
const bit<8> NDP_OPT_TARGET_LLADDR = 2;

/*
 * MRC-lite BTH opcodes (docs/packet-formats.md). Data opcodes follow RoCE's
 * RC RDMA WRITE Only / WRITE Only with Immediate; every MRC-lite data packet
 * carries a RETH (its final address), so packets may arrive in any order.
 * Everything else on port 4791 is control and is never trimmed.
 */
const bit<8> MRC_OP_WRITE = 0x0A;        /* data: BTH RETH payload */
const bit<8> MRC_OP_WRITE_IMM = 0x0B;    /* data: BTH RETH IMMDT payload */
const bit<8> MRC_OP_ACK = 0x11;          /* control: BTH AETH SACK (ACK or NACK by syndrome) */
const bit<8> MRC_OP_PROBE = 0xC0;        /* control: BTH PROBE */
const bit<8> MRC_OP_PROBE_REPLY = 0xC1;  /* control: BTH PROBE */

/* AETH syndromes used by MRC-lite. */
const bit<8> MRC_SYNDROME_ACK = 0x00;
const bit<8> MRC_SYNDROME_NACK_LOSS = 0x60;     /* gap seen: data lost */
const bit<8> MRC_SYNDROME_NACK_TRIMMED = 0x61;  /* a trimmed packet arrived: congestion */

/* ---- Limits ------------------------------------------------------------- */

/*
 * The SRH segment list is parsed into a header stack of at most
 * SRH_MAX_SEGMENTS entries (Last Entry <= 7) and at most SRH_MAX_TLV_WORDS
 * 8-byte words of TLVs (128 bytes) after it. An SRH beyond these limits, or one
 * whose Hdr Ext Len cannot hold its segment list, is not parsed: hdr.srh stays
 * valid (the fixed 8 bytes), meta.prs.srh_parsed stays 0 and the rest of the
 * packet is payload. Transit switches still forward such a packet on its DA; a
 * switch that would have to process the SRH drops it as a bad SRH.
 */
#define SRH_MAX_SEGMENTS 8
#define SRH_MAX_TLV_WORDS 16

/* ---- Types ------------------------------------------------------------- */

typedef bit<48> mac_addr_t;
typedef bit<128> ipv6_addr_t;
typedef bit<9> port_t;

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16> ether_type;
}

header ipv6_t {
    bit<4> version;
    bit<8> traffic_class;   /* DSCP (7..2) and ECN (1..0) */
    bit<20> flow_label;
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

/*
 * The fixed 8 bytes of an IPv6 routing header. For routing type 4 this is the
 * SRH of RFC 8754; the segment list and TLVs follow in srh_segments/srh_tlvs.
 */
header srh_t {
    bit<8> next_hdr;
    bit<8> hdr_ext_len;     /* in 8-byte units, not counting the first 8 bytes */
    bit<8> routing_type;
    bit<8> segments_left;
    bit<8> last_entry;
    bit<8> flags;
    bit<16> tag;
}

/* One entry of the SRH segment list. Stack index i is Segment List[i]. */
header srh_segment_t {
    ipv6_addr_t sid;
}

/* TLV area of an SRH, carried opaquely in 8-byte words (RFC 8754 pads TLVs to 8). */
header srh_tlv_word_t {
    bit<64> data;
}

header udp_t {
    bit<16> src_port;       /* MRC-lite: the sending socket's port */
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* InfiniBand Base Transport Header (12 bytes), as RoCEv2 carries it. */
header bth_t {
    bit<8> opcode;
    bit<1> solicited;
    bit<1> mig_req;
    bit<2> pad_count;
    bit<4> tver;
    bit<16> pkey;           /* MRC-lite: the entropy value (EV), no partitions */
    bit<1> fecn;
    bit<1> becn;
    bit<6> resv6;
    bit<24> dest_qp;
    bit<1> ack_req;
    bit<7> resv7;
    bit<24> psn;
}

/* RDMA Extended Transport Header (16 bytes): where the payload goes. */
header reth_t {
    bit<64> vaddr;
    bit<32> rkey;
    bit<32> dma_len;
}

/* Immediate data (4 bytes) of WRITE with immediate. */
header immdt_t {
    bit<32> imm;
}

/* ACK Extended Transport Header (4 bytes): ACK or NACK by syndrome. */
header aeth_t {
    bit<8> syndrome;
    bit<24> msn;
}

/* MRC-lite selective acknowledgement (16 bytes), after the AETH. */
header mrc_sack_t {
    bit<16> ev;             /* EV of the packet that triggered this ACK (echo) */
    bit<8> flags;
    bit<8> reserved;
    bit<32> base_psn;       /* bits 23..0: first PSN the bitmap describes */
    bit<64> bitmap;         /* bit 63 = base_psn, bit 62 = base_psn + 1, ... */
}

/* MRC-lite path probe (16 bytes), after the BTH of PROBE / PROBE_REPLY. */
header mrc_probe_t {
    bit<16> ev;             /* EV (path) being probed */
    bit<16> flags;
    bit<32> seq;
    bit<64> timestamp;      /* sender's clock, echoed by the reply */
}

header icmpv6_t {
    bit<8> type;
    bit<8> code;
    bit<16> checksum;
}

/* Body of a neighbour solicitation / advertisement (RFC 4861). */
header ndp_t {
    bit<32> flags;          /* NA: R S O bits 31..29; NS: reserved */
    ipv6_addr_t target_addr;
}

/* Source / target link-layer address option (8 bytes, for Ethernet). */
header ndp_option_t {
    bit<8> type;
    bit<8> length;          /* in 8-byte units: 1 */
    mac_addr_t lladdr;
}

/*
 * Every header either program parses or emits, in wire order. The common
 * deparser (parser.p4) emits them in this order.
 */
struct headers_t {
    ethernet_t ethernet;
    ipv6_t ipv6;                                  /* outer (or only) IPv6 */
    srh_t srh;
    srh_segment_t[SRH_MAX_SEGMENTS] srh_segments;
    srh_tlv_word_t[SRH_MAX_TLV_WORDS] srh_tlvs;
    ipv6_t inner_ipv6;                            /* after next header 41 */
    udp_t udp;
    bth_t bth;
    reth_t reth;
    immdt_t immdt;
    aeth_t aeth;
    mrc_sack_t sack;
    mrc_probe_t probe;
    icmpv6_t icmpv6;
    ndp_t ndp;
    ndp_option_t ndp_option;
}

/*
 * What the common parser records besides headers. A program's metadata_t must
 * have a field `parser_metadata_t prs;` (see parser.p4).
 */
struct parser_metadata_t {
    bit<8> srh_segs_todo;   /* segment entries still to extract */
    bit<8> srh_tlv_words;   /* TLV words still to extract */
    bit<1> srh_parsed;      /* 1: the whole SRH (segments, TLVs) was extracted */
    bit<1> l4_after_srh;    /* 1: UDP/ICMPv6 directly follows an SRH (no inner IPv6) */
}

#endif /* MRC_HEADERS_P4 */
