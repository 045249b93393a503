#!/usr/bin/python3
# compare.py — compares a matrix a DML script wrote with R's reference (tests/dml/run.sh).
#   compare.py GOT EXPECTED [--tol T] [--sign-columns] [--sorted-rows]
# Both are csv files of numbers. Passes (exit 0) when the shapes agree and every element has
# |got - expected| <= T * max(1, |expected|) (T = 1e-6). --sign-columns first flips each column
# of GOT whose sign differs from EXPECTED's (eigenvectors have no sign); --sorted-rows compares
# the rows as sets (sorted lexicographically).
import sys
import numpy as np


def load(path):
    rows = [line.strip() for line in open(path) if line.strip()]
    return np.array([[float(v) for v in r.split(",")] for r in rows], dtype=float)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    tol = 1e-6
    if "--tol" in argv:
        tol = float(argv[argv.index("--tol") + 1])
        args.remove(argv[argv.index("--tol") + 1])
    got, exp = load(args[0]), load(args[1])
    if got.shape != exp.shape:
        print(f"{args[0]}: shape {got.shape}, expected {exp.shape}")
        return 1
    if "--sign-columns" in argv:
        for j in range(got.shape[1]):
            if np.dot(got[:, j], exp[:, j]) < 0:
                got[:, j] = -got[:, j]
    if "--sorted-rows" in argv:
        got = np.array(sorted(map(tuple, got)))
        exp = np.array(sorted(map(tuple, exp)))
    err = np.abs(got - exp) / np.maximum(1.0, np.abs(exp))
    if not np.all(np.isfinite(got)) or err.max() > tol:
        i, j = np.unravel_index(np.nanargmax(np.where(np.isfinite(err), err, np.inf)), err.shape)
        print(f"{args[0]}: [{i + 1},{j + 1}] is {got[i, j]!r}, expected {exp[i, j]!r} "
              f"(relative error {err[i, j]:.3g} > {tol:g})")
        return 1
    return 0


sys.exit(main(sys.argv))
