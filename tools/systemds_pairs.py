#!/usr/bin/env python3
"""systemds_pairs.py DIR [MLS] — issue 29 item 6 on a SystemDS checkout: every DML/R test pair
whose scripts take only inputs and outputs must agree (docs/dml.md, "Measuring a SystemDS
checkout"; tools/systemds_check.sh runs this as its part 5 when Rscript is installed).

A pair is DIR/src/test/scripts/functions/**/X.dml beside X.R. SystemDS's Java tests run both on
the same inputs and compare their outputs; here a pair is *measured* when
  - every $name of X.dml is a path: read($k ...) reads an input, write(v, $k ...) writes an
    output (ifdef($k, default) is allowed: it keeps its default), and
  - X.R uses only args[1] (the input directory, read by readMM(paste(args[1], "A.mtx", ...)))
    and args[2] (the output directory, written by writeMM(..., paste(args[2], "B", ...)) or
    write(x, paste(args[2], "S", ...)) for a scalar),
  - with as many inputs and outputs in each, matched by name ($A and "A.mtx") or else in order.
Other pairs need values only the Java test knows (dimensions, scalars, sparsity) and are
listed as "not measured" with the reason. Each measured pair gets the same seeded inputs:
dense matrices of uniform values in (0, 1) (MatrixMarket files for R; for MLS "i j v" text
with a .mtd sidecar, as SystemDS's test harness writes them), of the first shapes (shape_plans: all 10x10, all
10x1, ..., a matrix and vectors) on which R's script and MLS both run: the Java tests choose
shapes their scripts accept, and R accepts some that DML rejects. R's script runs with Rscript (library Matrix), MLS's with
`MLS -args ...` (or -nvargs for named $args); an output agrees when its shape is the same and
every cell is within 1e-8 * max(1, |R's value|) (NaN equal to NaN); an R output that is a
column of as many cells (R drops the dims of colSums and other results, and writeMM writes a
vector as a column) is compared with MLS's matrix in column-major order. Where a pair's Java
test compares otherwise (TOL_OF, ORDERLESS below: a looser tolerance, sorted values), so does
this. Each run may take
SDS_PAIR_TIMEOUT seconds (default 60); SDS_PAIR_SHARD=i/n measures every n-th pair from the
i-th (0-based), to split a run; SDS_PAIR_ONLY=REGEX measures the pairs whose name (the path
under functions/, without extension) matches.
Exit status: 0 when every measured pair agrees, else 1 (2: bad arguments).
"""
import functools, os, random, re, shutil, subprocess, sys, tempfile
print = functools.partial(print, flush=True)

TOL = 1e-8
# Where a pair's Java test compares otherwise, the same here (its file and setting named):
# BuiltinDistTest: eps = 1e-3 (dist.R rounds to 3 decimals)
TOL_OF = {"builtin/dist": 1e-3}
# setoperations/SetOperationsTestBase: the values of both outputs are sorted, then compared
ORDERLESS = {"builtin/intersect", "builtin/setdiff", "builtin/union", "builtin/symmetricDifference"}


def strip_comments(text, mark):
    out = []
    for line in text.splitlines():
        q = None
        for i, c in enumerate(line):           # a comment mark outside a string
            if q:
                if c == q: q = None
            elif c in "\"'": q = c
            elif c == mark: line = line[:i]; break
        out.append(line)
    return "\n".join(out)


def dml_params(text):
    """[(name, 'in'|'out'|'opt'|'other')] of each $name, by its first use that is not opt."""
    uses = {}
    order = []
    for m in re.finditer(r"\$([A-Za-z0-9_]+)", text):
        k = m.group(1)
        before = text[:m.start()]
        if re.search(r"\bread\(\s*$", before): kind = "in"
        elif re.search(r"\bifdef\(\s*$", before): kind = "opt"
        elif re.search(r"\bwrite\(\s*[^,;\n]*,\s*$", before) and before.rfind("write(") > before.rfind(")\n"): kind = "out"
        else: kind = "other"
        if k not in uses: order.append(k); uses[k] = set()
        uses[k].add(kind)
    res = []
    for k in order:
        u = uses[k] - {"opt"}
        if not u: res.append((k, "opt"))
        elif len(u) == 1: res.append((k, u.pop()))
        else: res.append((k, "other"))
    return res


def r_files(text):
    """(inputs, outputs, reason): R's input file names and (output name, kind) in order."""
    bad = sorted(set(int(a) for a in re.findall(r"args\[(\d+)\]", text)) - {1, 2})
    if bad: return None, None, "R takes args[%d] (a value from the Java test)" % bad[0]
    ins = []
    for m in re.finditer(r"args\[1\]", text):
        ctx = text[max(0, m.start() - 40):m.end() + 40]
        f = re.search(r"readMM\(\s*paste\(\s*args\[1\]\s*,\s*\"([^\"]+)\"", ctx)
        if not f: return None, None, "R reads args[1] other than by readMM (%s)" % ctx.strip().split("\n")[0][:60]
        ins.append(f.group(1))
    outs = []
    for m in re.finditer(r"args\[2\]", text):
        line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end()) if text.find("\n", m.end()) >= 0 else len(text)]
        f = re.search(r"paste\(\s*args\[2\]\s*,\s*\"([^\"]+)\"", line)
        if not f: return None, None, "R uses args[2] other than as an output path"
        if re.search(r"\bwriteMM\(", line): outs.append((f.group(1), "mm"))
        elif re.search(r"\bwrite\(", line): outs.append((f.group(1), "scalar"))
        else: return None, None, "R writes an output other than by writeMM or write (%s)" % line.strip()[:60]
    return ins, outs, None


def shape_plans(n):
    """The input shapes tried, in order: all 10x10, all 10x1, all 1x10, then the first 10x10
    and the others 10x1 or 1x10, then the first a column or row and the others 10x10."""
    sq, col, row = (10, 10), (10, 1), (1, 10)
    if n == 0: return [[]]
    plans = [[sq] * n, [col] * n, [row] * n]
    if n > 1:
        plans += [[sq] + [col] * (n - 1), [sq] + [row] * (n - 1), [col] + [sq] * (n - 1), [row] + [sq] * (n - 1)]
    return plans


def shape_text(shapes):
    return "inputs " + ", ".join("%dx%d" % s for s in shapes) if shapes else "no inputs"


def write_inputs(mm, dml, rows, cols, rng):
    """One random matrix, as MatrixMarket for R (mm) and, as SystemDS's test harness writes
    inputs, as DML's "i j v" text with a .mtd sidecar (dml)."""
    v = [[rng.random() for _ in range(cols)] for _ in range(rows)]
    with open(mm, "w") as f:
        f.write("%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (rows, cols, rows * cols))
        for j in range(cols):
            for i in range(rows):
                f.write("%d %d %.17g\n" % (i + 1, j + 1, v[i][j]))
    with open(dml, "w") as f:
        for i in range(rows):
            for j in range(cols):
                f.write("%d %d %.17g\n" % (i + 1, j + 1, v[i][j]))
    with open(dml + ".mtd", "w") as f:
        f.write('{"data_type": "matrix", "value_type": "double", "rows": %d, "cols": %d, "nnz": %d, "format": "text"}\n'
                % (rows, cols, rows * cols))


def run(cmd, cwd, tmo):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=tmo)
        return p.returncode, p.stdout.decode("utf8", "replace")
    except subprocess.TimeoutExpired:
        return 124, "timed out after %d s" % tmo


def first_error(out):
    for line in out.splitlines():
        if "error" in line.lower(): return line.strip()[:160]
    lines = out.strip().splitlines()
    return lines[-1][:160] if lines else "(no output)"


def read_matrix(path):
    """(rows, cols, {(i, j): v}) of a MatrixMarket, DML text (ijv, shape from .mtd), csv or
    scalar file; None if it cannot be read."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()
    lines = [l for l in text.splitlines() if l.strip()]
    cells = {}
    if lines and lines[0].startswith("%%MatrixMarket"):
        head = lines[0].split()
        body = [l for l in lines[1:] if not l.startswith("%")]
        dims = body[0].split()
        r, c = int(dims[0]), int(dims[1])
        if head[2] == "array":
            vals = [float(x) for l in body[1:] for x in l.split()]
            for k, v in enumerate(vals): cells[(k % r, k // r)] = v
        else:
            sym = head[4] if len(head) > 4 else "general"
            for l in body[1:]:
                t = l.split()
                i, j = int(t[0]) - 1, int(t[1]) - 1
                v = float(t[2]) if len(t) > 2 else 1.0          # pattern: the entries are 1
                cells[(i, j)] = v
                if sym != "general" and i != j:                   # (skew-)symmetric: the half below
                    cells[(j, i)] = -v if sym == "skew-symmetric" else v
        return r, c, cells
    fmt, r, c = None, None, None
    if os.path.exists(path + ".mtd"):
        mtd = open(path + ".mtd").read()
        m = re.search(r'"format"\s*:\s*"([^"]+)"', mtd); fmt = m.group(1) if m else None
        m = re.search(r'"rows"\s*:\s*(\d+)', mtd); r = int(m.group(1)) if m else None
        m = re.search(r'"cols"\s*:\s*(\d+)', mtd); c = int(m.group(1)) if m else None
        if re.search(r'"data_type"\s*:\s*"scalar"', mtd): fmt = "scalar"
    if fmt is None and len(lines) == 1 and len(lines[0].split()) == 1 and "," not in lines[0]:
        fmt = "scalar"
    if fmt == "scalar":
        s = lines[0].strip() if lines else "nan"
        v = {"TRUE": 1.0, "FALSE": 0.0, "true": 1.0, "false": 0.0}.get(s)
        return 1, 1, {(0, 0): v if v is not None else float(s)}
    if fmt == "csv" or (fmt is None and "," in text):
        rows = [l.split(",") for l in lines]
        for i, row in enumerate(rows):
            for j, x in enumerate(row): cells[(i, j)] = float(x)
        return len(rows), max((len(x) for x in rows), default=0), cells
    if fmt in (None, "text"):
        mr = mc = 0
        for l in lines:
            t = l.split()
            i, j = int(t[0]), int(t[1])
            cells[(i - 1, j - 1)] = float(t[2])
            mr, mc = max(mr, i), max(mc, j)
        return (r if r is not None else mr), (c if c is not None else mc), cells
    return None


def agree(a, b, tol=TOL, orderless=False):
    """None when matrix a (MLS) equals b (R) within tol, else the first difference; orderless:
    the sorted lists of cell values are compared instead."""
    ra, ca, A = a
    rb, cb, B = b
    if orderless:
        x = sorted(A.values(), key=lambda v: (v != v, v))
        y = sorted(B.values(), key=lambda v: (v != v, v))
        if len(x) != len(y):
            return "%d values, R's %d" % (len(x), len(y))
        A = {(k, 0): v for k, v in enumerate(x)}
        B = {(k, 0): v for k, v in enumerate(y)}
        ra, ca, rb, cb = len(x), 1, len(y), 1
    if (ra, ca) != (rb, cb) and cb == 1 and rb == ra * ca:
        # R's result was a plain vector (R drops dims: colSums, bitwAnd, ...), which writeMM
        # writes as a column in column-major order: compare MLS's matrix read that way
        A = {(i + j * ra, 0): v for (i, j), v in A.items()}
        ra, ca = rb, cb
    if (ra, ca) != (rb, cb) and not (ra * ca == 1 and rb * cb == 1):
        return "shape %dx%d, R's %dx%d" % (ra, ca, rb, cb)
    if ra * ca == 1 and rb * cb == 1:
        keys = [((0, 0), (0, 0))]
        A = {(0, 0): next(iter(A.values()), 0.0)}
        B = {(0, 0): next(iter(B.values()), 0.0)}
    keys = set(A) | set(B)
    for k in sorted(keys):
        x, y = A.get(k, 0.0), B.get(k, 0.0)
        if x != x and y != y: continue
        if x == y: continue
        if x != x or y != y or abs(x - y) > tol * max(1.0, abs(y)):
            return "cell [%d,%d]: %.10g, R's %.10g" % (k[0] + 1, k[1] + 1, x, y)
    return None


def main():
    if len(sys.argv) < 2:
        print(__doc__.split("\n")[0], file=sys.stderr); return 2
    root = os.path.abspath(sys.argv[1])
    mls = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "./mls")
    tmo = int(os.environ.get("SDS_PAIR_TIMEOUT", "60"))
    fdir = os.path.join(root, "src/test/scripts/functions")
    if not os.path.isdir(fdir):
        print("systemds_pairs.py: no src/test/scripts/functions under %s" % root, file=sys.stderr); return 2
    if not shutil.which("Rscript"):
        print("systemds_pairs.py: Rscript is not installed (apt-get install r-base-core r-cran-matrix)", file=sys.stderr); return 2
    # a builtin MLS lacks resolves from the checkout's scripts/builtin, as SystemDS resolves its
    # own (docs/dml.md --dml-builtins; lmpredict calls glmPredict)
    os.environ.setdefault("MLS_DML_BUILTINS", os.path.join(root, "scripts/builtin"))
    pairs = []
    for d, _, files in os.walk(fdir):
        for f in files:
            if f.endswith(".dml") and f[:-4] + ".R" in files:
                pairs.append(os.path.join(d, f[:-4]))
    pairs.sort()
    only = os.environ.get("SDS_PAIR_ONLY")             # a regular expression on the pair's name
    if only:
        pairs = [p for p in pairs if re.search(only, os.path.relpath(p, fdir))]
    shard = os.environ.get("SDS_PAIR_SHARD")            # "i/n": every n-th pair from the i-th (0-based)
    if shard:
        i, n = (int(x) for x in shard.split("/"))
        pairs = pairs[i::n]
    tmp = tempfile.mkdtemp(prefix="mls-sdspairs.")
    npass = nfail = nskip = 0
    try:
        for base in pairs:
            name = os.path.relpath(base, fdir)
            dml = strip_comments(open(base + ".dml", errors="replace").read(), "#")
            rtx = strip_comments(open(base + ".R", errors="replace").read(), "#")
            ps = dml_params(dml)
            other = [k for k, kind in ps if kind == "other"]
            if other:
                nskip += 1; print("  skip %-58s $%s is not a path (a value from the Java test)" % (name, other[0])); continue
            rin, rout, why = r_files(rtx)
            if why:
                nskip += 1; print("  skip %-58s %s" % (name, why)); continue
            din = [k for k, kind in ps if kind == "in"]
            dout = [k for k, kind in ps if kind == "out"]
            if len(din) != len(rin) or len(dout) != len(rout) or not dout:
                nskip += 1
                print("  skip %-58s %d inputs and %d outputs, R's %d and %d" % (name, len(din), len(dout), len(rin), len(rout))); continue
            # match by name where the names agree, else in order
            rin_names = [os.path.splitext(x)[0] for x in rin]
            if all(k in rin_names for k in din): rin = [rin[rin_names.index(k)] for k in din]
            rout_names = [x for x, _ in rout]
            if all(k in rout_names for k in dout): rout = [rout[rout_names.index(k)] for k in dout]
            w = os.path.join(tmp, "w")
            named = not all(re.fullmatch(r"\d+", k) for k in din + dout)
            if not named:
                n = max(int(k) for k in din + dout)
                if sorted(int(k) for k in din + dout) != list(range(1, n + 1)):
                    nskip += 1; print("  skip %-58s its $1..$n are not all paths" % name); continue
            # the first input shapes that R's script and MLS both accept (the Java test picks
            # shapes its script accepts; R accepts some that DML rejects, e.g. outer of matrices)
            ok = None
            mfail = None
            rerr = "(no shape tried)"
            for shapes in shape_plans(len(rin)):
                shutil.rmtree(w, ignore_errors=True)
                for sub in ("in", "dml", "outR", "outM"): os.makedirs(os.path.join(w, sub))
                rng = random.Random(7)
                for f, sh in zip(rin, shapes):
                    write_inputs(os.path.join(w, "in", f), os.path.join(w, "dml", os.path.splitext(f)[0]), sh[0], sh[1], rng)
                rc, out = run(["Rscript", base + ".R", os.path.join(w, "in") + "/", os.path.join(w, "outR") + "/"], w, tmo)
                if rc != 0 or not all(os.path.exists(os.path.join(w, "outR", o)) for o, _ in rout):
                    rerr = first_error(out); continue
                vals = {}
                for k, f in zip(din, rin): vals[k] = os.path.join(w, "dml", os.path.splitext(f)[0])
                for k, (o, _) in zip(dout, rout): vals[k] = os.path.join(w, "outM", o)
                if named:
                    cmd = [mls, base + ".dml", "-nvargs"] + ["%s=%s" % (k, v) for k, v in vals.items()]
                else:
                    cmd = [mls, base + ".dml", "-args"] + [vals[str(i)] for i in range(1, len(vals) + 1)]
                rc, out = run(cmd, w, tmo)
                if rc == 0: ok = shapes; break
                e = first_error(out).replace(w + "/", "").replace(root + "/", "")
                errs = (mfail or []) + ([e] if e not in (mfail or []) else [])
                mfail = errs                                # each distinct error, by shapes tried
            if ok is None and mfail is not None:
                nfail += 1; print("  FAIL %-58s MLS: %s" % (name, " | other shapes: ".join(mfail))); continue
            if ok is None:
                nskip += 1; print("  skip %-58s R's script fails on every input shape: %s" % (name, rerr)); continue
            diff = None
            for k, (o, kind) in zip(dout, rout):
                m = read_matrix(vals[k])
                r = read_matrix(os.path.join(w, "outR", o))
                if m is None or r is None:
                    diff = "output %s: %s" % (o, "MLS wrote no readable file" if m is None else "R's is unreadable"); break
                d = agree(m, r, TOL_OF.get(name, TOL), name in ORDERLESS)
                if d: diff = "output %s: %s" % (o, d); break
            if diff:
                nfail += 1; print("  FAIL %-58s %s: %s" % (name, shape_text(ok), diff))
            else:
                npass += 1; print("  pass %-58s %s" % (name, shape_text(ok)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("pairs: %d of %d agree; %d of %d pairs not measured (they need values from the Java test or R fails)"
          % (npass, npass + nfail, nskip, len(pairs)))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
