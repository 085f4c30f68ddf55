// The few calls of simple_switch's Thrift runtime service ("simple_switch", multiplexed)
// that the project makes: egress queue depth and rate per port.

service SimpleSwitch {
  i32 set_egress_queue_depth(1:i32 port_num, 2:i32 depth_pkts);
  i32 set_egress_queue_rate(1:i32 port_num, 2:i64 rate_pps);
  i64 get_time_elapsed_us();
}
