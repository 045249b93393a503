#!/usr/bin/env python3
"""gen_files.py — writes the crafted inputs of tests/robustness/test_limits.sh (issue 25, defect 6):
malformed gzip streams, a NUL byte in a csv cell, checkpoints with duplicate or non-UTF-8 names.
They are kept in git; run this again (python3 tests/robustness/files/gen_files.py) to remake them
byte for byte. tests/fuzz/make_corpus.py copies them into the readers' seed corpora.
"""
import gzip, os, struct, zlib

D = os.path.dirname(os.path.abspath(__file__))


def put(name, data):
    with open(os.path.join(D, name), "wb") as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, mtime=0)


csv = "".join("%d,%d\n" % (i, 2 * i) for i in range(1, 1001)).encode()
full = gz(csv)
put("cut.csv.gz", full[: len(full) // 2])                  # gzip -t: unexpected end of file
put("pad.csv.gz", full + b"garbage\n")                     # trailing garbage
put("zeros.csv.gz", full + bytes(16))                      # zero padding after the member
put("two.csv.gz", gz(csv[: len(csv) // 2]) + gz(csv[len(csv) // 2:]))   # two members: valid
# an .npy whose data is whole but whose gzip trailer (CRC, size) is cut off
hdr = b"{'descr': '<f8', 'fortran_order': False, 'shape': (100, 10), }"
hdr += b" " * (64 - 10 - len(hdr) - 1) + b"\n"
npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + struct.pack("<1000d", *range(1000))
z = gz(npy)
put("cut.npy.gz", z[:-8])
put("nul.csv", b"1,2\n3,4\x005\n")


def ckpt(entries):
    """A checkpoint of (name bytes, tag, payload bytes) entries, with a correct CRC-32."""
    body = b""
    for name, tag, payload in entries:
        body += struct.pack("<I", len(name)) + name + struct.pack("<BQ", tag, len(payload)) + payload
    size = 24 + len(body) + 4
    data = b"MLSCKPT\x00" + struct.pack("<IIQ", 1, len(entries), size) + body
    return data + struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)


num = lambda x: (1, struct.pack("<d", x))
put("dup.ckpt", ckpt([(b"a", *num(1)), (b"b", *num(2)), (b"a", *num(3))]))
lst = struct.pack("<I", 2) + b"".join(struct.pack("<I", 1) + b"x" + struct.pack("<BQ", 1, 8) + struct.pack("<d", v) for v in (1, 2))
put("dupnested.ckpt", ckpt([(b"L", 5, lst)]))
put("badname.ckpt", ckpt([(b"ok", *num(1)), (b"a\xff\xfeb", *num(2))]))
put("nulname.ckpt", ckpt([(b"a\x00b", *num(1))]))
put("nulstr.ckpt", ckpt([(b"s", 3, b"ab\x00cd")]))
