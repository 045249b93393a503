#!/usr/bin/env python3
"""check_cases.py — runs `mls --check` on every case of golden test files (tests/lang/*.test
format, src/testrun.c) in a fresh directory with its files and arguments, as the runner runs
it. A case that runs without error (exit 0) must check clean: no output, exit 0; anything else
is a false report and fails. For a case that fails, a report must name the run's own error
(the same first line), or nothing: a different error is a false report too, unless it is one
the run never reaches (listed as 'other error' for a look, not failed: the run may stop first
at an error the check does not see, such as a stop() or a missing file).
Usage: check_cases.py MLS FILE.test... [--verbose]"""
import os
import shutil
import subprocess
import sys
import tempfile


def cases(path):
    out, cur, sec = [], None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if line.startswith("=== "):
            if cur:
                out.append(cur)
            cur = {"name": line[4:], "line": i + 1, "prog": [], "stdout": [], "stderr": [], "exit": 0,
                   "args": "", "files": [], "script": "t.mls"}
            sec = cur["prog"]
        elif cur is not None and line.startswith("--- "):
            rest = line[4:]
            if rest.startswith("stdout"):
                sec = cur["stdout"]
            elif rest.startswith("stderr"):
                sec = cur["stderr"]
            elif rest.startswith("exit:"):
                cur["exit"] = int(rest[5:].strip() or 0)
                sec = None
            elif rest.startswith("args:"):
                cur["args"] = rest[5:].strip()
                sec = None
            elif rest.startswith("script:"):
                cur["script"] = rest[7:].strip()
                sec = None
            elif rest.startswith("file:"):
                body = []
                cur["files"].append((rest[5:].strip(), body))
                sec = body
        elif cur is not None and sec is not None and not (last and line == ""):
            sec.append(line)
    if cur:
        out.append(cur)
    return out


def text(lines):
    while len(lines) >= 1 and lines[-1] == "":
        lines = lines[:-1]
    return "\n".join(lines) + "\n" if lines else ""


def main():
    args = [a for a in sys.argv[1:] if a != "--verbose"]
    verbose = "--verbose" in sys.argv
    mls = os.path.abspath(args[0])
    top = tempfile.mkdtemp(prefix="mls-check-")
    clean = false_reports = caught = silent = other = n = 0
    try:
        for path in args[1:]:
            for c in cases(path):
                n += 1
                d = os.path.join(top, str(n))
                os.makedirs(d)
                for name, body in c["files"]:
                    p = os.path.join(d, name)
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    with open(p, "w") as f:
                        f.write(text(body))
                with open(os.path.join(d, c["script"]), "w") as f:
                    f.write(text(c["prog"]))
                cmd = [mls, "--check", c["script"]] + c["args"].split()
                try:
                    r = subprocess.run(cmd, cwd=d, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                       errors="replace", timeout=60)
                    got, st = r.stdout + r.stderr, r.returncode
                except subprocess.TimeoutExpired:
                    got, st = "timed out after 60 s\n", -1
                where = "%s:%d: %s" % (path, c["line"], c["name"])
                want_err = text(c["stderr"])
                if c["exit"] == 0:
                    if st == 0 and (got == "" or got == want_err):   # (or the run's own warning)
                        clean += 1
                    else:
                        false_reports += 1
                        print("FALSE REPORT %s (runs without error)\n  exit %d\n%s" % (where, st, got), end="")
                    continue
                first = got.split("\n")[0]
                if st == 0 and got == "":
                    silent += 1
                elif want_err.split("\n")[0] == first and st == 1:
                    caught += 1
                    if got != want_err and verbose:
                        print("CAUGHT (trace differs) %s\n%s  want:\n%s" % (where, got, want_err), end="")
                elif st == 2 and c["exit"] == 2:
                    caught += 1
                else:
                    other += 1
                    print("OTHER ERROR %s\n  check:\n%s  run:\n%s" % (where, got, want_err), end="")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("%d cases: %d clean ones checked clean, %d false reports; of the failing ones %d caught, "
          "%d not seen, %d other error" % (n, clean, false_reports, caught, silent, other))
    return 1 if false_reports else 0


if __name__ == "__main__":
    sys.exit(main())
