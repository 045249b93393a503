#!/usr/bin/env python3
"""reduce_prog.py — shrinks an MLS program that shows a defect (a crash, or a difference
between modes found by tests/gen/gen_diff) to a few lines, by removing lines and balanced
{ } blocks while the defect stays.

  tools/reduce_prog.py PROGRAM.mls --crash [--mls ./mls] [--flags "--staged"]
  tools/reduce_prog.py PROGRAM.mls --differ "--staged" [--exact] [--mls ./mls]
  tools/reduce_prog.py PROGRAM.mls --prints TEXT [--flags F] [--mls ./mls]

--crash: interesting while mls exits with a signal or an internal error.
--differ F: interesting while `mls` and `mls F` (both at --digits 17) differ in status,
stderr or stdout (numbers to 1e-12 relative; with --exact, the same text, with
MLS_EXACT_REWRITES=1 as tests/gen/gen_diff runs the CPU modes).
--prints TEXT: interesting while stdout has TEXT (a check the program itself prints, as
gen_diff --grad's "FDMISMATCH"). Writes the result to PROGRAM.min.mls.
"""
import argparse, subprocess, sys, tempfile, os

def run(mls, flags, text):
    with tempfile.NamedTemporaryFile('w', suffix='.mls', delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([mls] + flags + ['--digits', '17', path], capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr.replace(path, 'P')
    except subprocess.TimeoutExpired:
        return 'timeout', '', ''
    finally:
        os.unlink(path)

def same_numbers(a, b):
    """a and b equal with numbers to 1e-12 relative, as MLS_TEST_COMPARE (src/testrun.c)."""
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb): return False
    for x, y in zip(ta, tb):
        if x == y: continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if fx != fy and not abs(fx - fy) <= 1e-12 * max(abs(fx), abs(fy)): return False
    return True

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('prog')
    ap.add_argument('--mls', default='./mls')
    ap.add_argument('--flags', default='')
    ap.add_argument('--crash', action='store_true')
    ap.add_argument('--differ')
    ap.add_argument('--exact', action='store_true')
    ap.add_argument('--prints')
    a = ap.parse_args()
    if a.exact: os.environ['MLS_EXACT_REWRITES'] = '1'
    flags = a.flags.split()
    def interesting(text):
        if a.crash:
            rc, _, err = run(a.mls, flags, text)
            return rc != 'timeout' and (rc < 0 or rc == 134 or 'internal error' in err)
        if a.prints is not None:
            rc, out, _ = run(a.mls, flags, text)
            return rc != 'timeout' and a.prints in out
        e = run(a.mls, flags, text)
        s = run(a.mls, flags + a.differ.split(), text)
        same = e[1] == s[1] if a.exact else same_numbers(e[1], s[1])
        return e[0] != 'timeout' and s[0] != 'timeout' and (e[0] != s[0] or e[2] != s[2] or not same)
    lines = open(a.prog).read().split('\n')
    if not interesting('\n'.join(lines)):
        sys.exit('reduce_prog: the program does not show the defect')
    changed = True
    while changed:
        changed = False
        i = len(lines) - 1
        while i >= 0:
            # a line, or a line opening a block together with its block
            depth, j = 0, i
            for j in range(i, len(lines)):
                depth += lines[j].count('{') - lines[j].count('}')
                if depth <= 0: break
            for lo, hi in ((i, j), (i, i)):
                cand = lines[:lo] + lines[hi + 1:]
                if hi >= lo and interesting('\n'.join(cand)):
                    lines = cand
                    changed = True
                    break
            i = min(i, len(lines)) - 1
    out = os.path.splitext(a.prog)[0] + '.min.mls'
    open(out, 'w').write('\n'.join(lines))
    print('\n'.join(lines))

main()
