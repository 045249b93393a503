#!/usr/bin/env python3
"""regolden.py FILE LINE... — rewrite the expected stdout/stderr/exit of the cases starting at
the given lines of a golden file with what ./mls produces now. Use only after judging that the
new output is right; it is a maintenance aid, never run by the test suite."""
import os, subprocess, sys, tempfile

def parse(lines):
    cases, cur = [], None
    for i, ln in enumerate(lines):
        if ln.startswith("=== "):
            cur = {"start": i, "end": len(lines)}
            if cases: cases[-1]["end"] = i
            cases.append(cur)
    return cases

def run_case(body):
    prog, args, sec, keep = [], "", "prog", []
    for ln in body:
        if ln.startswith("--- "):
            sec = ln[4:].split(":")[0].strip()
            if sec == "args": args = ln.split(":", 1)[1].strip()
            if sec == "storage": keep.append(ln)      # kept as written (testrun.c)
            assert sec not in ("file", "script"), "regolden: cases with files are not handled"
            continue
        if sec == "prog": prog.append(ln)
    while prog and prog[-1] == "\n": prog.pop()
    d = tempfile.mkdtemp()
    open(os.path.join(d, "t.mls"), "w").write("".join(prog))
    p = subprocess.run([os.path.abspath("mls"), "t.mls"] + args.split(), cwd=d, capture_output=True, text=True)
    return prog, args, p, keep

fn, wanted = sys.argv[1], {int(x) for x in sys.argv[2:]}
lines = open(fn).readlines()
out = []
cases = parse(lines)
pos = 0
for c in cases:
    out.extend(lines[pos:c["start"]])
    body = lines[c["start"] + 1:c["end"]]
    if c["start"] + 1 not in wanted:
        out.extend(lines[c["start"]:c["end"]])
    else:
        prog, args, p, keep = run_case(body)
        out.append(lines[c["start"]])
        out.extend(prog)
        if args: out.append("--- args: " + args + "\n")
        out.extend(keep)
        out.append("--- stdout\n"); out.append(p.stdout)
        if p.stderr: out.append("--- stderr\n"); out.append(p.stderr)
        if p.returncode: out.append("--- exit: %d\n" % p.returncode)
        out.append("\n")
    pos = c["end"]
out.extend(lines[pos:])
open(fn, "w").write("".join(out))
