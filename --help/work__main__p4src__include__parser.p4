ERROR /work/main/p4src/include/parser.p4:30:18: error: unknown type 'packet_in'; declare it before use
