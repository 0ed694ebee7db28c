#!/usr/bin/env python3
"""make_half_reference.py — expected float32 -> bfloat16 and float16 roundings.

Writes conversions.txt: one line per float32 input, "F32 BF16 F16" as hex
bit patterns ("nan" where the result must be a NaN, any NaN). Computed
independently of normcore's bit tricks (tensor/half.h):

  float16: Python's struct format 'e' (IEEE binary16, round half to even;
           a value it refuses as too large becomes +-inf, as IEEE says).
  bfloat16: the two bfloat16 neighbours of the input by magnitude, their
           exact distances to it (fractions.Fraction), the nearer wins and
           a tie goes to the even bit pattern; past the largest finite
           value the next neighbour is +-inf, valued 2^128 for the rounding
           (IEEE's overflow rule).

Run with /usr/bin/python3 (only the standard library); the inputs are the
edge cases below and 3,000 seeded random ones.
"""
import math
import random
import struct
from fractions import Fraction


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def bf16_value(h):  # the format's definition: float32's upper half
    if h & 0x7FFF == 0x7F80:
        return Fraction(-(2**128) if h & 0x8000 else 2**128)
    return Fraction(f32(h << 16))


def to_bf16(bits):
    x = f32(bits)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "%04x" % (bits >> 16)
    low = bits >> 16  # truncation: the neighbour of no greater magnitude
    high = low + 1    # the next bfloat16 away from zero
    X = Fraction(x)
    d_low, d_high = abs(X - bf16_value(low)), abs(bf16_value(high) - X)
    if d_low < d_high or (d_low == d_high and low % 2 == 0):
        return "%04x" % low
    return "%04x" % high


def to_f16(bits):
    x = f32(bits)
    if math.isnan(x):
        return "nan"
    try:
        return "%04x" % struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return "fc00" if x < 0 else "7c00"


def inputs():
    edge = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
            0x7F800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x807FFFFF, 0x00800000]
    # bfloat16 ties: low half exactly 0x8000 on even and odd kept bits, and just off them.
    for top in (0x3F80, 0x3F81, 0x4049, 0x7F7F, 0x0080, 0xC2C8):
        for low in (0x7FFF, 0x8000, 0x8001):
            edge.append(top << 16 | low)
    # float16's edges: 65504 (max), 65519.99, 65520 (rounds to inf), 2^-14, 2^-24, 2^-25 and around them.
    for v in (65504.0, 65519.0, 65520.0, 65536.0, 6.103515625e-05, 6.0975551605224609e-05, 5.9604644775390625e-08,
              2.98023223876953125e-08, 2.98023259404089e-08, 8.940696716308594e-08, 1.0009765625, 1.00048828125,
              1.000732421875, 2049.0, 2051.0, -0.0001, 0.333333343267):
        b = struct.unpack("<I", struct.pack("<f", v))[0]
        edge += [b, b ^ 0x80000000, b + 1, b - 1]
    # float16 ties in the normal range: low 13 bits exactly 0x1000, even and odd.
    for b in (0x3F801000, 0x3F803000, 0x47000000 | 0x1000, 0x38801000, 0x38803000):
        edge += [b, b + 1, b - 1]
    rng = random.Random(20261203)
    rand = [rng.getrandbits(32) for _ in range(1500)]                      # every class: NaN, inf, subnormal
    rand += [struct.unpack("<I", struct.pack("<f", rng.uniform(-70000, 70000)))[0] for _ in range(700)]
    rand += [struct.unpack("<I", struct.pack("<f", rng.uniform(-1e-4, 1e-4)))[0] for _ in range(500)]
    rand += [struct.unpack("<I", struct.pack("<f", math.ldexp(rng.random(), rng.randint(-30, 20))))[0] for _ in range(300)]
    return edge + rand


if __name__ == "__main__":
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "conversions.txt"), "w") as out:
        out.write("# float32 bfloat16 float16 (hex bits; nan: any NaN) — make_half_reference.py\n")
        for bits in inputs():
            out.write("%08x %s %s\n" % (bits, to_bf16(bits), to_f16(bits)))
