ERROR /work/main/tests/p4/constructs/inc/l3_headers.p4:36:1: error: the program has no 'main'; add V1Switch(MyParser(), ..., MyDeparser()) main;
