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


if __name__ == "__main__":
    main()
