ERROR /work/main/p4target/include/v1model.p4:156:1: error: the program has no 'main'; add V1Switch(MyParser(), ..., MyDeparser()) main;
