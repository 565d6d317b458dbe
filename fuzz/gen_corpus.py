#!/usr/bin/env python3
"""Write the seed corpus fuzz/corpus/<target>/ (committed; rerun only to change the seeds).
Seeds are hand-picked boundary inputs: zeros, each format's max, overflow and tie points, subnormals,
NaN and Inf, with a few random words, in each target's byte layout (see the target's comment)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.5, 5.0, 6.0, 7.0, -6.5, 0.25, 0.75,
          448.0, 464.0, 465.0, -480.0, 57344.0, 61439.0, 61440.0, 65504.0, 65519.0, 65520.0,
          2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 2.0 ** -24, 2.0 ** -25, 1.5 * 2 ** -126,
          2.0 ** -127, 2.0 ** -128, 2.0 ** -149, 2.0 ** 127, 1.5 * 2 ** 127, 3.0e38, -7.5, 8.5, 127.5, 128.0,
          -128.5, 255.5, 256.0, 15.5, 2147483520.0, -2147483648.0, 1.0e10]
SPECIAL_BITS = [0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F7FFFFF, 0x00000001, 0x807FFFFF, 0x3F800001]
RANDOM = [(0, 0), (0xFFFFFFFF, 1), (0x80000000, 0x7FFFFFFF), (0x12345678, 0x9ABCDEF0)]


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    xs = [struct.unpack("<I", struct.pack("<f", v))[0] for v in FLOATS] + SPECIAL_BITS
    for i, xb in enumerate(xs):
        r1, r2 = RANDOM[i % len(RANDOM)]
        code = (i * 0x1F3 + 0x7E) & 0xFFFF
        write("codec", "seed_%03d" % i, struct.pack("<IIIH", xb, r1, r2, code))
        write("round", "seed_%03d" % i, struct.pack("<IIIQQIIII", xb, r1, r2, i * 0x9E3779B97F4A7C15 % 2 ** 64,
                                                     (1 << 32) + i if i % 2 else i, i, 0, 0xFFFFFFFF, 0x243F6A88))
    # Random123's published Philox4x32-10 vectors as round-target inputs (counter, key).
    write("round", "kat_zero", struct.pack("<IIIQQIIII", 0, 0, 0, 0, 0, 0, 0, 0, 0))
    write("round", "kat_ones", struct.pack("<IIIQQIIII", 0, 0, 0, 0xFFFFFFFFFFFFFFFF, 7,
                                           0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF))
    write("round", "kat_pi", struct.pack("<IIIQQIIII", 0, 0, 0, 0x13198A2EA4093822, 2,
                                         0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344))
    groupquant_corpus()
    pack_corpus()
    feedback_corpus()


# fuzz_groupquant header (fuzz_groupquant.hpp parse()): 19 bytes of selectors, u64 seed, f32 eps, f32 outer.
GQ_HEADER = "<19BQff"
GQ_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 3.5, -7.25, 448.0, 1e-3, 2.0 ** -130, 1e30, -3.0e38,
             float("nan"), float("inf"), float("-inf"), 65504.0, 2.0 ** -24, 6.0, -0.1, 100.0]


def gq_seed(fmt, kind, flags, pow2, store, work, eps_sel, in_type, out_type, rnd, group_sel, g1, g2, rows, cols,
            pad, scale_pad, outer_sel, corrupt, values, seed=0x243F6A8885A308D3, eps=1e-5, outer=0.5):
    head = struct.pack(GQ_HEADER, fmt, kind, flags, pow2, store, work, eps_sel, in_type, out_type, rnd, group_sel,
                       g1, g2, rows, cols, pad, scale_pad, outer_sel, corrupt, seed, eps, outer)
    if in_type % 3 == 0:
        body = b"".join(struct.pack("<f", v) for v in values)
    else:  # 16-bit: the bf16 bits (upper half of the float) or fp16 bits
        body = b"".join(struct.pack("<e", v if abs(v) < 65520 or v != v else 0.0) if in_type % 3 == 1 else struct.pack("<f", v)[2:] for v in values)
    return head + body


def groupquant_corpus():
    vals = GQ_VALUES
    finite = [v for v in vals if v == v and abs(v) != float("inf") and abs(v) < 6e4]
    i = 0
    # Every format x kind, nearest and stochastic, every group shape, the three input dtypes.
    for fmt in range(7):
        for kind in range(3):
            for rnd in range(2):
                group_sel = (fmt + kind + rnd) % 6
                in_type = (fmt + kind) % 3
                v = finite if in_type == 1 else vals
                write("groupquant", "seed_%03d" % i,
                      gq_seed(fmt, kind, (fmt * 37 + kind * 11) & 0x7F, kind % 4, (fmt + kind) % 6, 0, kind * 8 + 1,
                              in_type, (fmt + rnd) % 3, rnd, group_sel, 5 + fmt, 7 + kind, 3 + fmt, 9 + 5 * kind, 2, 1,
                              (fmt + rnd) % 6, 0, v))
                i += 1
    # Scale storages, pow2 rules, work dtypes, eps rules on int4/fp4 and e4m3.
    for store in range(6):
        for pow2 in range(4):
            fmt = (0, 6, 4, 3)[pow2]
            write("groupquant", "seed_%03d" % i,
                  gq_seed(fmt, store % 2, 0x40 if store % 2 else 0, pow2, store, store % 3, 8 * (store % 3) + pow2,
                          0, 0, 0, 2, 15, 0, 4, 33, 3, 2, 0, 0, vals))
            i += 1
    # NVFP4: fp4_e2m1 float_amax, ue4m3 storage, outer = amax/(448*6), 1x16 groups.
    write("groupquant", "nvfp4", gq_seed(6, 0, 0, 0, 4, 0, 0, 0, 0, 0, 2, 15, 0, 8, 64, 0, 0, 1, 0, vals))
    # MXFP4 / MXFP8 (mx_floor, e8m0), DeepGEMM 1x128-ish (ceil_pow2), te_current.
    write("groupquant", "mxfp4", gq_seed(6, 0, 0, 2, 5, 0, 0, 0, 0, 0, 2, 31, 0, 2, 80, 0, 0, 0, 0, vals))
    write("groupquant", "mxfp8_rceil", gq_seed(4, 0, 0, 3, 5, 0, 0, 0, 0, 1, 2, 31, 0, 2, 80, 0, 0, 0, 0, vals))
    write("groupquant", "deepgemm_block", gq_seed(4, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 7, 39, 20, 80, 1, 1, 0, 0, vals))
    write("groupquant", "te_current", gq_seed(5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 17, 0, 0, 0, 0, vals))
    # Subnormal, all-zero, all-NaN groups; empty and one-element tensors.
    write("groupquant", "subnormal", gq_seed(2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 3, 8, 0, 0, 0, 0,
                                             [2.0 ** -140, -2.0 ** -149, 2.0 ** -126, 0.0]))
    write("groupquant", "all_zero", gq_seed(0, 2, 0, 0, 2, 0, 0, 0, 0, 0, 2, 3, 0, 2, 9, 0, 0, 0, 0, [0.0]))
    write("groupquant", "all_nan", gq_seed(4, 0, 0, 0, 4, 0, 0, 0, 0, 0, 2, 3, 0, 2, 9, 0, 0, 0, 0, [float("nan")]))
    write("groupquant", "empty", gq_seed(1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, []))
    write("groupquant", "one", gq_seed(3, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, [3.0]))
    # Each corruption (corrupt byte: low nibble >= 12 selects, high nibble picks which).
    for c in range(12):
        write("groupquant", "corrupt_%02d" % c,
              gq_seed(c % 7, 2, 0, 0, c % 5, 0, 0, c % 3, 0, 0, c % 6, 3, 4, 4, 12, 1, 1, 0, 0xC | (c << 4), vals))


def pack_corpus():
    """fuzz_pack: op, four shape/option bytes, then code/value bytes (fuzz_pack.cpp)."""
    body = bytes(range(256)) + struct.pack("<8f", 1.0, -2.5, 0.0, 3.0e38, -1e-30, 65504.0, 7.0, -8.0)
    seeds = {
        "dense_signed_int4": (0, 7, 19, 4, 0), "dense_signed_rows_int3": (0, 33, 5, 0x80 | 3, 0x20),
        "dense_unsigned_int8": (1, 3, 13, 8, 0), "dense_bad_bits": (1, 2, 2, 9, 0), "dense_wild": (0, 4, 9, 2, 0x18),
        "dense_null": (1, 4, 4, 4, 7), "dense_empty": (0, 0, 5, 4, 0),
        "nibbles_odd_low": (2, 31, 0, 0, 0), "nibbles_high": (2, 64, 1, 1, 0), "nibbles_wild": (2, 9, 0, 0, 0x18),
        "ue8m0": (3, 5, 13, 0, 0), "ue8m0_null": (3, 2, 3, 0, 7),
        "gptq_int4": (4, 5, 3, 4, 0x82), "gptq_int2": (4, 10, 6, 2, 0x05), "gptq_int8_v1": (4, 15, 9, 8, 0x83),
        "gptq_bad_k": (4, 10, 5, 4, 0x02), "gptq_bad_bits": (4, 10, 6, 3, 0), "gptq_fp16_raw": (4, 20, 6, 4, 0x43),
        "marlin_64x16": (5, 0, 3, 0, 0), "marlin_128x32": (5, 3, 6, 0x05, 0), "marlin_bad": (5, 1, 3, 2, 0),
        "marlin_channel": (5, 0, 6, 0x40, 0),
        "gguf_q4_0": (6, 0, 1, 0, 0), "gguf_q4_1": (6, 1, 2, 0, 0), "gguf_q8_0": (6, 2, 3, 0, 0),
        "gguf_bad_n": (6, 0, 4, 0, 0), "gguf_nonfinite": (6, 2, 1, 1, 0),
        "fp8_block_128": (7, 69, 89, 0, 0), "fp8_block_small": (7, 9, 17, 0x15, 0), "fp8_block_bad_shape": (7, 9, 17, 0x95, 0),
        "fp8_block_not_pow2": (7, 9, 17, 0x55, 0),
    }
    for name, (op, a, b, c, d) in seeds.items():
        write("pack", name, bytes([op, a, b, c, d]) + body)
    small = struct.pack("<96f", *[((i * 37) % 29 - 14) / 3.5 for i in range(96)])
    for t in range(3):
        write("pack", "gguf_small_%d" % t, bytes([6, t, 3, 0, 0]) + small)
    write("pack", "gguf_zero_block", bytes([6, 0, 1, 0, 0]) + bytes(128))


def feedback_corpus():
    """fuzz_feedback: op, two config bytes, u64 seed, then op-specific bytes (fuzz_feedback.cpp). Values
    are 3 bytes each: exponent byte (0xFF NaN/Inf, 0xFE raw bits) and an int16 mantissa."""
    def vals(k, scale_e=40):
        return b"".join(struct.pack("<Bh", scale_e + (i % 5), ((i * 7919) % 2001) - 1000) for i in range(k))
    seed = struct.pack("<Q", 0x243F6A8885A308D3)
    for op, res in ((0, "none"), (1, "fp32"), (2, "bf16")):
        for cfg in range(4):
            a = [0, 0x09, 0x1A, 0x03][cfg]
            b = [0, 8, 16 | 32, 8 | 16][cfg]
            data = bytes([op, a, b]) + seed + bytes([33 + cfg * 10, [0, 2, 1, 2][cfg], 5])
            for t in range(6):
                data += bytes([t * 3]) + vals(96, 40 if t != 3 else 50)
            write("feedback", "grad_%s_%d" % (res, cfg), data)
    data = bytes([1, 0, 0]) + seed + bytes([16, 0, 3])
    for t in range(4):
        v = vals(16)
        if t == 2:
            v = v[:15] + struct.pack("<Bh", 0xFF, 1) + v[18:]
        data += bytes([0]) + v
    write("feedback", "grad_nan_skip", data)
    write("feedback", "grad_nan_zero", bytes([2, 0, 16]) + data[3:])
    write("feedback", "grad_bad_config", bytes([1, 5, 0]) + seed + bytes([8, 0, 1, 0]) + vals(8))
    write("feedback", "grad_null", bytes([1, 0, 0]) + seed + bytes([8, 0, 0xC1, 0]) + vals(8) + bytes([0]) + vals(8))
    write("feedback", "grad_bad_group", bytes([1, 0, 0]) + seed + bytes([10, 1 + 4 * 2, 1, 0]) + vals(10))
    for i, (p, a) in enumerate(((0x3F800000, 0x40000000), (0, 0x3A83126F), (0x7F7FFFFF, 0x7F7FFFFF),
                                (0x00000001, 0x7F800000), (0x3F800000, 0x7FC00000), (0xBF800000, 0x3F000000))):
        write("feedback", "update_%d" % i, bytes([3, i * 9, i % 4]) + seed + struct.pack("<II", p, a))
    for i in range(6):
        data = bytes([4, [0, 0x49, 2, 0x0B, 3, 0x41][i], [0, 0x40, 0x09, 0x1B, 0, 0x48][i]]) + seed
        data += bytes([[64, 100, 3, 200, 0, 255][i], [0, 3, 9, 7, 15, 64][i], [3, 2, 1, 0x33, 0xC1, 3][i]])
        write("feedback", "adam_%d" % i, data + vals(260) * 5)


if __name__ == "__main__":
    main()
