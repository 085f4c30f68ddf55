/* Checksums: verify_checksum of IPv4 (a wrong one sets standard_metadata.checksum_error),
 * update_checksum of IPv4 after a TTL change, and update_checksum_with_payload of UDP
 * over IPv6 (pseudo-header, UDP header, then the unparsed payload). */
#include <core.p4>
#include <v1model.p4>
#include "inc/l3_headers.p4"

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    ipv6_t     ipv6;
    udp_t      udp;
}

struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control Ing(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.checksum_error == 1) {
            mark_to_drop(sm);
            exit;
        }
        sm.egress_spec = 2;
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
        if (hdr.udp.isValid()) {
            hdr.udp.src_port = 5555;
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, 16w0, hdr.udp.length, 24w0, hdr.ipv6.next_hdr,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control Dep(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
