"""Packet I/O of a running switch on Linux interfaces: the loop over the ports
(``netio``), PACKET_MMAP rings (``packet_ring``) and the ports with and without them
(``ring_port``, ``socket_port``), the Linux side (``linux_net``: sockets, interfaces,
link notifications; ``offloads``), and pcap files (``pcap``)."""
