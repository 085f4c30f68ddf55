ERROR /work/main/p4target/include/core.p4:54:1: error: the program has no 'main'; add V1Switch(MyParser(), ..., MyDeparser()) main;
