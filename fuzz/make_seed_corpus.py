#!/usr/bin/env python3
"""Writes the hand-made seed files of tests/data/safetensors_corpus/: well-formed files
(good_*) and one malformed file per error class the reader reports (bad_*). The corpus
regression test (tests/core/safetensors_corpus_test.cpp) checks each bad_* file's error
text, so renaming a file here means updating the test. Fuzzer-found inputs (hex names)
sit beside these files.

good_hf_reference.safetensors is written by the reference implementation
(the `safetensors` Python package) when it is installed; the file is kept as committed
otherwise.

Usage: python3 fuzz/make_seed_corpus.py [output_dir]
"""
import json
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "safetensors_corpus")


def raw(header, data=b"", length=None, pad=True):
    """A file from header text and data bytes; `length` overrides the header length."""
    h = header.encode("utf-8") if isinstance(header, str) else header
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def hdr(entries):
    return json.dumps(entries, separators=(",", ":"))


def write(name, blob):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)


def main():
    os.makedirs(OUT, exist_ok=True)
    u8x4 = entry("U8", [4], 0, 4)

    # --- well formed ---------------------------------------------------------------
    write("good_basic.safetensors", raw(hdr({
        "__metadata__": {"format": "pt"},
        "w": entry("F32", [2, 2], 0, 16),
        "b": entry("BF16", [2], 16, 20),
    }), struct.pack("<4f", 1.0, 2.0, 3.0, 4.0) + b"\x80\x3f\x00\x40"))
    every = {}
    data = b""
    for name, width, count in [("F64", 8, 1), ("I64", 8, 1), ("U64", 8, 1), ("C64", 8, 1), ("F32", 4, 1),
                               ("I32", 4, 1), ("U32", 4, 1), ("F16", 2, 1), ("BF16", 2, 1), ("I16", 2, 1),
                               ("U16", 2, 1), ("F8_E4M3", 1, 1), ("F8_E5M2", 1, 1), ("F8_E8M0", 1, 1),
                               ("I8", 1, 1), ("U8", 1, 1), ("BOOL", 1, 1), ("F4", 1, 2), ("F6_E2M3", 3, 4),
                               ("F6_E3M2", 3, 4)]:
        every["t_" + name] = entry(name, [count], len(data), len(data) + width)
        data += bytes(range(len(data), len(data) + width))
    write("good_every_dtype.safetensors", raw(hdr(every), data))
    write("good_empty.safetensors", raw("{}"))
    write("good_zero_size_and_scalar.safetensors", raw(hdr({
        "empty": entry("F32", [0, 5], 0, 0),
        "scalar": entry("F32", [], 0, 4),
        "also_empty": entry("I64", [3, 0], 4, 4),
    }), struct.pack("<f", 7.0)))
    # Zero elements, so valid, but the trailing dimensions overflow 64-bit strides.
    write("good_zero_size_huge_strides.safetensors", raw(hdr({"x": entry("F32", [0, 2**40, 2**40], 0, 0)})))
    write("good_unpadded_header.safetensors", raw(hdr({"x": u8x4}), b"abcd", pad=False))

    # --- one malformed file per error class ---------------------------------------------
    write("bad_truncated.safetensors", b"\x10\x00\x00\x00\x00")
    write("bad_header_past_eof.safetensors", raw("{}", length=4096))
    write("bad_header_too_large.safetensors", raw("{}", length=200_000_000))
    write("bad_not_json.safetensors", raw('{"x": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]'))
    write("bad_not_object.safetensors", raw("[1, 2, 3]"))
    write("bad_entry_not_object.safetensors", raw(hdr({"x": [1, 2]})))
    write("bad_missing_dtype.safetensors", raw(hdr({"x": {"shape": [4], "data_offsets": [0, 4]}}), b"abcd"))
    write("bad_missing_shape.safetensors", raw(hdr({"x": {"dtype": "U8", "data_offsets": [0, 4]}}), b"abcd"))
    write("bad_missing_offsets.safetensors", raw(hdr({"x": {"dtype": "U8", "shape": [4]}}), b"abcd"))
    write("bad_unknown_dtype.safetensors", raw(hdr({"x": entry("Q4_K", [4], 0, 4)}), b"abcd"))
    write("bad_negative_shape.safetensors", raw(hdr({"x": entry("U8", [-4], 0, 4)}), b"abcd"))
    write("bad_float_shape.safetensors", raw(hdr({"x": entry("U8", [4.0], 0, 4)}), b"abcd"))
    write("bad_size_mismatch.safetensors", raw(hdr({"x": entry("F32", [4], 0, 4)}), b"abcd"))
    write("bad_offsets_out_of_range.safetensors", raw(hdr({"x": entry("U8", [4], 0, 4)}), b"ab"))
    write("bad_offsets_reversed.safetensors", raw(hdr({"x": entry("U8", [4], 4, 0)}), b"abcd"))
    write("bad_overlap.safetensors", raw(hdr({"x": u8x4, "y": entry("U8", [4], 2, 6)}), b"abcdef"))
    write("bad_hole.safetensors", raw(hdr({"x": u8x4, "y": entry("U8", [4], 6, 10)}), b"abcdefghij"))
    write("bad_trailing_bytes.safetensors", raw(hdr({"x": u8x4}), b"abcdefgh"))
    write("bad_duplicate_name.safetensors",
          raw('{"x":' + json.dumps(u8x4) + ',"x":' + json.dumps(u8x4) + "}", b"abcd"))
    write("bad_shape_overflow.safetensors", raw(hdr({"x": entry("F32", [2**32, 2**32], 0, 0)})))
    write("bad_metadata_not_string.safetensors", raw(hdr({"__metadata__": {"step": 1000}})))
    write("bad_invalid_utf8.safetensors", raw(b'{"\xff\xfe": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}'))
    write("bad_too_deep.safetensors", raw('{"x":' + "[" * 80 + "]" * 80 + "}"))

    try:
        import numpy as np
        from safetensors.numpy import save_file
    except ImportError:
        print("safetensors/numpy not installed: keeping good_hf_reference.safetensors as it is")
    else:
        save_file({"embed.weight": np.arange(24, dtype=np.float32).reshape(4, 6),
                   "norm.weight": np.arange(6, dtype=np.float16),
                   "ids": np.arange(3, dtype=np.int64)},
                  os.path.join(OUT, "good_hf_reference.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    main()
