ERROR /work/main/p4src/include/headers.p4:225:1: error: the program has no 'main'; add V1Switch(MyParser(), ..., MyDeparser()) main;
