#!/usr/bin/python3
# compare.py — compares a matrix a DML script wrote with R's reference (tests/dml/run.sh).
#   compare.py GOT EXPECTED [--tol T] [--sign-columns] [--sorted-rows]
# Both are csv files of numbers. Passes (exit 0) when the shapes agree and every element has
# |got - expected| <= T * max(1, |expected|) (T = 1e-6). --sign-columns first flips each column
# of GOT whose sign differs from EXPECTED's (eigenvectors have no sign); --sorted-rows compares
# the rows as sets (sorted lexicographically).
import math
import sys


def load(path):
    rows = [line.strip() for line in open(path) if line.strip()]
    return [[float(v) for v in r.split(",")] for r in rows]


def shape(m):
    return (len(m), len(m[0]) if m else 0)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    tol = 1e-6
    if "--tol" in argv:
        tol = float(argv[argv.index("--tol") + 1])
        args.remove(argv[argv.index("--tol") + 1])
    got, exp = load(args[0]), load(args[1])
    if shape(got) != shape(exp) or any(len(r) != len(got[0]) for r in got + exp):
        print(f"{args[0]}: shape {shape(got)}, expected {shape(exp)}")
        return 1
    if "--sign-columns" in argv:
        for j in range(len(got[0]) if got else 0):
            if sum(g[j] * e[j] for g, e in zip(got, exp)) < 0:
                for r in got:
                    r[j] = -r[j]
    if "--sorted-rows" in argv:
        got, exp = sorted(got), sorted(exp)
    worst, where = -1.0, None          # (a NaN or an infinity in GOT is the worst)
    for i, (g, e) in enumerate(zip(got, exp)):
        for j, (x, y) in enumerate(zip(g, e)):
            err = abs(x - y) / max(1.0, abs(y)) if math.isfinite(x) else math.inf
            if err != err:
                err = math.inf
            if err > worst:
                worst, where = err, (i, j)
    if where is not None and worst > tol:
        i, j = where
        print(f"{args[0]}: [{i + 1},{j + 1}] is {got[i][j]!r}, expected {exp[i][j]!r} "
              f"(relative error {worst:.3g} > {tol:g})")
        return 1
    return 0


sys.exit(main(sys.argv))
