/* Shared headers of the construct test programs (included with a relative path). */
#ifndef _L3_HEADERS_P4_
#define _L3_HEADERS_P4_

typedef bit<48> mac_t;
type bit<128> ipv6_addr_t;

const bit<16> ETHERTYPE_IPV6 = 0x86dd;
#define PROTO_UDP 17

header ethernet_t {
    mac_t   dst_addr;
    mac_t   src_addr;
    bit<16> ether_type;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   traffic_class;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

#endif
