/* STF test program: multicast groups and I2E clones chosen by a test header.
 * Egress stamps every copy with its egress port, replica id and instance type.
 * Valid P4_16 for p4c-bm2-ss (v1model). */
#include <core.p4>
#include <v1model.p4>

header test_t {
    bit<16> mcast_grp;     // 0: unicast to out_port
    bit<16> clone_session; // 0: no clone
    bit<16> out_port;
    bit<16> egress_port;   // written in egress
    bit<16> rid;           // written in egress
    bit<32> instance_type; // written in egress
}

struct headers_t {
    test_t t;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    apply {
        if (hdr.t.mcast_grp != 0) {
            sm.mcast_grp = hdr.t.mcast_grp;
        } else {
            sm.egress_spec = (bit<9>)hdr.t.out_port;
        }
        if (hdr.t.clone_session != 0) {
            clone(CloneType.I2E, (bit<32>)hdr.t.clone_session);
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply {
        hdr.t.egress_port = (bit<16>)sm.egress_port;
        hdr.t.rid = sm.egress_rid;
        hdr.t.instance_type = sm.instance_type;
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
