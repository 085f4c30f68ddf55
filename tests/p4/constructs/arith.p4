/* Expressions with P4 width rules: wrap-around, saturating, signed int<W>, shifts,
 * slices (read and write), concatenation, casts, comparisons, ternary, literals of
 * infinite precision, serializable enums, typedef/type, local variables and constants.
 * Ingress computes every result into the res header from the operands in ops. */
#include <core.p4>
#include <v1model.p4>

#define BIG_SHIFT 10
#if defined(BIG_SHIFT) && BIG_SHIFT > 8
const bit<8> K = (1 << BIG_SHIFT) >> 8;      // 4: the literal has infinite precision
#else
const bit<8> K = 99;
#endif
#ifdef NOT_DEFINED
#error "NOT_DEFINED must not be defined"
#elif BIG_SHIFT == 10
const bit<8> ELIF_TAKEN = 1;
#else
const bit<8> ELIF_TAKEN = 0;
#endif

typedef bit<8> byte_t;
type bit<16> word_t;
enum bit<8> Color { RED = 1, GREEN = 2, BLUE = 0x80 }
enum Mode { FAST, SLOW }

header ops_t {
    byte_t  a;
    byte_t  b;
    int<8>  sa;
    int<8>  sb;
    bit<16> w;
    bit<32> x;
}

header res_t {
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    bit<8>  div;
    bit<8>  mod;
    bit<8>  sat_add;
    bit<8>  sat_sub;
    bit<8>  band;
    bit<8>  bor;
    bit<8>  bxor;
    bit<8>  bnot;
    bit<8>  shl;
    bit<8>  shr;
    bit<16> shl_var;
    int<8>  sadd;
    int<8>  ssat_add;
    int<8>  ssat_sub;
    int<8>  sshr;
    bit<8>  neg;
    bit<16> cat;
    bit<8>  slice;
    bit<32> xw;
    bit<4>  trunc;
    bit<4>  pad;
    bit<32> widen;
    int<8>  to_signed;
    bit<8>  to_unsigned;
    bit<8>  flags;
    bit<8>  lit;
    bit<8>  color;
    bit<8>  k;
    bit<8>  uninit;
    bit<8>  tern;
    bit<16> word;
    bit<8>  mode;
    bit<8>  outp;
    bit<8>  inoutp;
    bit<16> tup;
    bit<8>  neg_sel;
}

struct headers_t {
    ops_t ops;
    res_t res;
}

struct metadata_t {
    bit<8> neg_sel;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ops);
        transition select(hdr.ops.sa) {
            -10 .. -1: negative;          // a signed range
            default: accept;
        }
    }
    state negative {
        meta.neg_sel = 1;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ing(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    bit<8> flags;
    Mode mode = Mode.SLOW;
    const bit<8> LOCAL_K = 0x10;

    action split(in bit<16> v, out bit<8> hi, inout bit<8> acc) {
        hi = v[15:8];
        acc = acc + v[7:0] + LOCAL_K;
    }

    action set_flag(in bool cond, in bit<3> bitpos) {
        if (cond) {
            flags = flags | ((bit<8>)1 << bitpos);
        }
    }

    apply {
        ops_t o = hdr.ops;
        hdr.res.setValid();
        hdr.res.add = o.a + o.b;
        hdr.res.sub = o.a - o.b;
        hdr.res.mul = o.a * o.b;
        hdr.res.div = o.a / o.b;
        hdr.res.mod = o.a % o.b;
        hdr.res.sat_add = o.a |+| o.b;
        hdr.res.sat_sub = o.a |-| o.b;
        hdr.res.band = o.a & o.b;
        hdr.res.bor = o.a | o.b;
        hdr.res.bxor = o.a ^ o.b;
        hdr.res.bnot = ~o.a;
        hdr.res.shl = o.a << 3;
        hdr.res.shr = o.a >> 2;
        hdr.res.shl_var = o.w << o.b[3:0];
        hdr.res.sadd = o.sa + o.sb;
        hdr.res.ssat_add = o.sa |+| o.sb;
        hdr.res.ssat_sub = o.sa |-| o.sb;
        hdr.res.sshr = o.sa >> 1;
        hdr.res.neg = -o.a;
        hdr.res.cat = o.a ++ o.b;
        hdr.res.slice = o.w[11:4];
        hdr.res.xw = o.x;
        hdr.res.xw[15:8] = o.a;
        hdr.res.trunc = (bit<4>)o.w;
        hdr.res.widen = (bit<32>)o.a;
        hdr.res.to_signed = (int<8>)o.a;
        hdr.res.to_unsigned = (bit<8>)o.sa;
        set_flag(o.a < o.b, 0);
        set_flag(o.sa < o.sb, 1);
        set_flag(o.a == 8w0xff || o.b != 0, 2);
        set_flag(!(o.a >= o.b) && true, 3);
        set_flag(o.w[15:15] == 1, 4);
        hdr.res.flags = flags;
        hdr.res.lit = (bit<8>)300 + 8w255 + 1;        // 44 + 255 + 1 wraps to 44
        hdr.res.color = (bit<8>)Color.BLUE | (o.a == 1 ? (bit<8>)Color.RED : 8w0);
        hdr.res.k = K + ELIF_TAKEN;
        bit<8> never_set;
        hdr.res.uninit = never_set;
        hdr.res.tern = o.a > o.b ? o.a : o.b;
        word_t wd = (word_t)o.w;
        hdr.res.word = (bit<16>)wd + 16w1;
        if (mode == Mode.SLOW) {
            hdr.res.mode = 7;
        }
        bit<8> acc = 1;
        split(o.w, hdr.res.outp, acc);
        hdr.res.inoutp = acc;
        tuple<bit<8>, bit<8>> pair = { o.a, o.b };
        hash(hdr.res.tup, HashAlgorithm.identity, 16w0, pair, 32w0x10000);
        hdr.res.neg_sel = meta.neg_sel;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Dep(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
