// The few calls of simple_switch's Thrift runtime service ("simple_switch", multiplexed)
// that the project makes: egress queue depth and rate per port.

service SimpleSwitch {
  i32 set_egress_queue_depth(1:i32 port_num, 2:i32 depth_pkts);
  i32 set_egress_queue_rate(1:i32 port_num, 2:i64 rate_pps);
  i64 get_time_elapsed_us();
}

// The standard runtime service ("standard", multiplexed): a register cell read and
// written (BMv2's P4Runtime server implements neither).
exception InvalidRegisterOperation {
  1:i32 code
}

service Standard {
  i64 bm_register_read(1:i32 cxt_id, 2:string register_array_name, 3:i32 idx)
    throws (1:InvalidRegisterOperation ouch);
  void bm_register_write(1:i32 cxt_id, 2:string register_array_name, 3:i32 index, 4:i64 value)
    throws (1:InvalidRegisterOperation ouch);
}
