#!/usr/bin/env python3
"""check_gen.py — generated programs (tests/gen/progen.c, printed by gen_diff --show K) run as
`mls --seed 42 p.mls` and checked as `mls --check p.mls`. A program that runs without error
must check clean; one that fails must be reported with its own first error line, or not at
all, or at a place the run reaches after its error (comparing the places of the two reports,
outermost call first: the run stopped before, at an error the check could not tell, or one
that depends on values, in the same statement); a report of another error before fails. (Two
places on one line are taken as in order, the line being a statement whose calls run their
arguments first; a loop may run a place of a smaller line later: such a report fails too.)
Usage: check_gen.py MLS GEN_DIFF SEED COUNT [FROM]"""
import os
import subprocess
import sys
import tempfile


def positions(report):
    """Where an error report says the error is, outermost call first: the (line, col) of each
    "in f() at F:L:C" line (last printed is outermost), then the error's own."""
    lines = [x for x in report.split("\n") if x]
    out = []
    for x in reversed(lines[1:]):
        if x.startswith("  in ") and " at " in x:
            out.append(where(x.split(" at ", 1)[1]))
    out.append(where(lines[0].split(": error:")[0]))
    return out


def where(loc):
    parts = loc.rsplit(":", 2)
    try:
        return (int(parts[1]), int(parts[2]))
    except (IndexError, ValueError):
        return (0, 0)


# run errors that depend on values the check does not know: the check's report may sit later in
# the same statement
DATA_ERRORS = ("finite matrix expected", "singular", "not positive definite", "symmetric matrix expected",
               "did not converge", "condition is NaN")


def after(chk, run):
    """True when the place of the check's report comes after the run's error in the order the
    program runs (a place inside the call the run failed at counts as after)."""
    a, b = positions(chk), positions(run)
    for x, y in zip(a, b):
        if x != y:
            return x[0] >= y[0]      # within one line (a statement) the order cannot be told here
    return len(a) >= len(b)


def main():
    verbose = "--verbose" in sys.argv
    sys.argv = [a for a in sys.argv if a != "--verbose"]
    mls, gen, seed, count = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    d = tempfile.mkdtemp(prefix="mls-checkgen-")
    p = os.path.join(d, "p.mls")
    clean = caught = silent = bad = later = 0
    for k in range(start, start + count):
        prog = subprocess.run([gen, "--seed", seed, "--show", str(k)], capture_output=True).stdout
        with open(p, "wb") as f:
            f.write(prog)
        run = subprocess.run([mls, "--seed", "42", p], cwd=d, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        chk = subprocess.run([mls, "--check", p], cwd=d, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        out = (chk.stdout + chk.stderr).decode(errors="replace")
        err = run.stderr.decode(errors="replace")
        if run.returncode == 0:
            if chk.returncode == 0 and out == "":
                clean += 1
                continue
            bad += 1
            print("FALSE REPORT seed %s program %d (runs without error):\n%s" % (seed, k, out))
            continue
        if chk.returncode == 0 and out == "":
            silent += 1
        elif out.split("\n")[0] == err.split("\n")[0]:
            caught += 1
        elif after(out, err) or (any(e in err.split("\n")[0] for e in DATA_ERRORS) and
                                 positions(out)[:-1] == positions(err)[:-1] and positions(out)[-1][0] == positions(err)[-1][0]):
            later += 1          # the run failed before it got there (an error the check cannot see)
            if verbose:
                print("LATER seed %s program %d:\n  check: %s\n  run:   %s" % (seed, k, out.split("\n")[0], err.split("\n")[0]))
        else:
            bad += 1
            print("OTHER ERROR seed %s program %d:\n  check:\n%s  run:\n%s" % (seed, k, out, err))
    os.remove(p)
    os.rmdir(d)
    print("%d programs: %d clean ones checked clean; of the failing ones %d caught, %d not seen, %d reported "
          "where the run does not get (it fails before, at an error the check cannot tell); %d false reports"
          % (count, clean, caught, silent, later, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
