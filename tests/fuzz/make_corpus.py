#!/usr/bin/env python3
"""make_corpus.py — regenerates tests/fuzz/corpus/<harness>/ and tests/fuzz/mls.dict.

Usage: python3 tests/fuzz/make_corpus.py ./mls   (make fuzz-corpus)

Seeds: the programs of tests/lang/*.test, examples/ and stdlib/ (corpus/programs: the seeds of
parse, eval and diff alike); the
data files of the test cases ("--- file:" sections), tests/fixtures/files and the crafted
malformed files of tests/robustness/files for the readers,
plus files that ./mls itself writes (every format, save()'s checkpoints) so that each reader
starts from valid files. The dictionary holds the language's keywords, operators and builtin
names (from the builtin table and the functions of stdlib/).
"""
import gzip, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests/fuzz/corpus")
MLS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "mls"))
FORMATS = ["csv", "text", "mm", "npy", "idx", "libsvm"]           # fuzz_read_gz's first byte, in order


def cases(path):
    """(name, program, {file name: contents}) for each case of a .test file."""
    out, cur, sec = [], None, None
    for line in open(path, encoding="utf-8", errors="surrogateescape").read().split("\n"):
        if line.startswith("=== "):
            cur = {"prog": [], "files": {}}
            out.append(cur)
            sec = cur["prog"]
        elif cur is not None and line.startswith("--- "):
            m = re.match(r"--- file:\s*(.*)", line)
            if m:
                sec = cur["files"].setdefault(m.group(1).strip(), [])
            else:
                sec = None
        elif sec is not None:
            sec.append(line)
    return [("\n".join(c["prog"]).rstrip("\n") + "\n", {k: "\n".join(v).rstrip("\n") + "\n" for k, v in c["files"].items()})
            for c in out]


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if harness == "programs" and len(data) > 16384:         # fuzz_eval's limit (fuzz_diff's: 8192)
        return
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def reader_of(fname):
    """The harness for a data file, by its name (None: not a data file)."""
    n = fname.lower()
    if n.endswith(".gz"):
        return None
    if n.endswith(".mtd"):
        return "read_mtd"
    for ext, h in ((".csv", "read_csv"), (".tsv", "read_csv"), (".txt", "read_text"), (".ijv", "read_text"),
                   (".mtx", "read_mm"), (".mm", "read_mm"), (".npy", "read_npy"), (".ckpt", "read_ckpt"),
                   (".libsvm", "read_libsvm"), (".svm", "read_libsvm")):
        if n.endswith(ext):
            return h
    if re.search(r"(\.idx\d?|-ubyte)$", n):
        return "read_idx"
    return None


def gz_seed(name, fmt, data):
    put("read_gz", name, bytes([FORMATS.index(fmt)]) + gzip.compress(data, mtime=0))


WRITER = r'''
M = [1, 2.5, -3; 4, 0, 1e-300; NaN, Inf, -Inf]
S = matrix(0, rows=5, cols=4); S[2, 3] = 7; S[5, 4] = -1
E = matrix(0, rows=0, cols=3)
B = [0, 1, 255; 3, 4, 5]
I = [-3, 200; 1000, 7]
C = [1; 2; 3]
for (f in list("csv", "text", "mm", "npy", "idx")) {
  write(M, "m." + f, format=f)
  write(S, "s." + f, format=f)
  write(C, "c." + f, format=f)
}
write(E, "e.csv"); write(E, "e.npy"); write(B, "b.idx"); write(I, "i.idx"); write(M, "h.csv", header=TRUE, sep=";")
write(M, "z.csv.gz"); write(S, "z.mtx.gz"); write(M, "z.npy.gz")
save("a.ckpt", n=2.5, b=TRUE, s="a \"quoted\"\nline", M=M, e=E, L=list(1, "x", list(a=S, b=FALSE)))
save("b.ckpt")
save("c.ckpt", x=1:10)
'''


def written_files():
    d = tempfile.mkdtemp(prefix="mls-corpus-")
    try:
        with open(os.path.join(d, "w.mls"), "w") as f:
            f.write(WRITER)
        subprocess.run([MLS, "w.mls"], cwd=d, check=True)
        for n in sorted(os.listdir(d)):
            if n != "w.mls":
                yield n, open(os.path.join(d, n), "rb").read()
    finally:
        shutil.rmtree(d)


def dictionary():
    words = set()
    lex = open(os.path.join(ROOT, "grammar/lexer.re")).read()
    for w in re.findall(r"'([^'\\\n]+)'", lex):           # re2c's literals: keywords, operators
        if "'" not in w and '"' not in w:
            words.add(w)
    md = subprocess.run([MLS, "--builtins-md"], capture_output=True, text=True, check=True).stdout
    words.update(re.findall(r"^\| `([A-Za-z_.][A-Za-z_.0-9]*)`", md, re.M))
    for f in sorted(os.listdir(os.path.join(ROOT, "stdlib"))):
        words.update(re.findall(r"^([A-Za-z_.][A-Za-z_.0-9]*)\s*=\s*function", open(os.path.join(ROOT, "stdlib", f)).read(), re.M))
    words.update(["function(", "rows=", "cols=", "argnum=", "format=", "header=", "sep=", "seed=", "\n", "1e308", "-0",
                  "1:3", "[1, 2; 3, 4]", "matrix(0, rows=2, cols=2)", "jit(", "grad(", "list(", "\"", "#", "'", "{", "}", "/*", "*/",
                  "%*%", "%%", "%/%", "**", "<-", "+=", "::", "TRUE", "FALSE", "NaN", "Inf", "NA", "NULL"])
    lines = ["# mls.dict — the language's tokens for libFuzzer's -dict (made by tests/fuzz/make_corpus.py)"]
    for w in sorted(words):
        lines.append('"' + "".join(c if " " <= c <= "~" and c not in '"\\' else "\\x%02X" % ord(c) for c in w) + '"')
    with open(os.path.join(ROOT, "tests/fuzz/mls.dict"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for t in sorted(os.listdir(os.path.join(ROOT, "tests/lang"))):
        if not t.endswith(".test"):
            continue
        base = t[:-5]
        for k, (prog, files) in enumerate(cases(os.path.join(ROOT, "tests/lang", t))):
            name = "%s-%03d.mls" % (base, k + 1)
            put("programs", name, prog)
            for fn, data in files.items():
                h = reader_of(fn)
                if h:
                    put(h, "%s-%03d-%s" % (base, k + 1, re.sub(r"[^A-Za-z0-9._-]", "_", fn)), data)
    for d in ("examples", "stdlib"):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.endswith(".mls"):
                put("programs", "%s-%s" % (d, f), open(os.path.join(ROOT, d, f), "rb").read())
    fx = os.path.join(ROOT, "tests/fixtures/files")
    for f in sorted(os.listdir(fx)):
        data = open(os.path.join(fx, f), "rb").read()
        if f.endswith(".gz"):
            plain = gzip.decompress(data)
            h = reader_of(f[:-3])
            if h:
                put(h, "fixture-" + f[:-3], plain)
                put("read_gz", "fixture-" + f, bytes([FORMATS.index(h[5:].replace("text", "text"))]) + data)
        else:
            h = reader_of(f)
            if h:
                put(h, "fixture-" + f, data)
    crafted = os.path.join(ROOT, "tests/robustness/files")       # issue 25's malformed inputs
    for f in sorted(os.listdir(crafted)):
        data = open(os.path.join(crafted, f), "rb").read()
        if f.endswith(".gz"):
            put("read_gz", "crafted-" + f, bytes([FORMATS.index(reader_of(f[:-3])[5:])]) + data)
        elif reader_of(f):
            put(reader_of(f), "crafted-" + f, data)
    for n, data in written_files():
        if n.endswith(".gz"):
            h = reader_of(n[:-3])
            put("read_gz", "written-" + n, bytes([FORMATS.index(h[5:])]) + data)
            continue
        ext = n.rsplit(".", 1)[1]
        h = "read_" + {"csv": "csv", "text": "text", "mm": "mm", "npy": "npy", "idx": "idx", "ckpt": "ckpt", "mtd": "mtd"}[ext]
        put(h, "written-" + n, data)
        if ext in FORMATS and not n.endswith(".mtd"):
            gz_seed("written-%s.gz" % n, ext, data)
    dictionary()
    for h in sorted(os.listdir(OUT)):
        print("%-10s %4d seeds" % (h, len(os.listdir(os.path.join(OUT, h)))))


main()
