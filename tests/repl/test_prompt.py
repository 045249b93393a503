#!/usr/bin/python3
"""test_prompt.py — issue 13 items 3 and 5 and the -e echo of item 4, where a terminal or a pipe
matters: live (line-buffered) output into a pipe, the progress bar (a terminal's stderr only),
`mls -e`, R-style matrix display fitted to the terminal, ?topics, help() through $PAGER and
did-you-mean at the prompt.

usage: tests/repl/test_prompt.py [path/to/mls]     (Python 3 standard library only)
Prints one line per check and "N passed, N failed"; exits 1 when a check failed.
"""
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_repl as tr  # noqa: E402  (its Session drives the REPL through a pty)

MLS = tr.MLS
ROOT = tr.ROOT


def env_with(**kw):
    e = dict(os.environ)
    e.pop("PAGER", None)
    e["MLS_PATH"] = os.path.join(ROOT, "stdlib")
    e.update(kw)
    return e


def read_until(fd, pattern, timeout):
    """Reads fd until pattern (bytes regex) is in what was read; returns (data, found)."""
    data = b""
    deadline = time.time() + timeout
    while not re.search(pattern, data):
        left = deadline - time.time()
        if left <= 0:
            return data, False
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            return data, False
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return data, bool(re.search(pattern, data))
        data += chunk
    return data, True


def check_live_output(tmp):
    """The script prints, then blocks reading a FIFO that is written only once the line was
    seen through the pipe: with a block-buffered stdout the line would wait in the buffer."""
    fifo = os.path.join(tmp, "gate.csv")
    os.mkfifo(fifo)
    script = os.path.join(tmp, "live.mls")
    with open(script, "w") as f:
        f.write('print("epoch 1 loss 0.5")\nx = read("%s", format="csv")\nprint("epoch 2 loss " + as.scalar(x))\n' % fifo)
    p = subprocess.Popen([MLS, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with())
    data, seen = read_until(p.stdout.fileno(), rb"epoch 1 loss 0\.5\n", 10)
    tr.check("a printed line reaches a pipe while the script still runs (line-buffered)", seen, data.decode())
    with open(fifo, "w") as g:                      # lets the script go on (or end, if it failed)
        g.write("0.25\n")
    out, err = p.communicate(timeout=10)
    tr.check("the script then ends normally", p.returncode == 0 and (data + out).decode().endswith("epoch 2 loss 0.25\n"),
             (data + out + err).decode())


def check_dash_e():
    def run(code):
        r = subprocess.run([MLS, "-e", code], capture_output=True, text=True, env=env_with(), timeout=20)
        return r.stdout, r.stderr, r.returncode
    tr.check("mls -e '1+2' prints 3 (as Rscript -e)", run("1+2") == ("3\n", "", 0), repr(run("1+2")))
    tr.check("mls -e prints each top-level value, not assignments",
             run("x = 5; x * 2; print(\"p\"); y = 1") == ("10\np\n", "", 0), repr(run("x = 5; x * 2; print(\"p\"); y = 1")))
    tr.check("mls -e shows a vector as print does", run("c(1, 2)") == ("1\n2\n", "", 0), repr(run("c(1, 2)")))
    tr.check("mls -e: invisible results stay invisible", run("set.seed(1); cat(\"a\\n\")") == ("a\n", "", 0),
             repr(run("set.seed(1); cat(\"a\\n\")")))
    r = subprocess.run([MLS, "-e", "x = 2", "-e", "x + 1", "-e", "x * 10"], capture_output=True, text=True,
                       env=env_with(), timeout=20)
    tr.check("several -e run in order, as one program (as Rscript)", (r.stdout, r.returncode) == ("3\n20\n", 0), repr(r.stdout))
    r = subprocess.run([MLS, "-e", "x = 2", "-e", "x +"], capture_output=True, text=True, env=env_with(), timeout=20)
    tr.check("... an error in the second is located on its line", r.returncode != 0 and r.stderr.startswith("-e:2:"), r.stderr)
    r = subprocess.run([MLS, "-e", "system.time(sum(1:10))", "-e", "t = system.time(1)", "-e", "t$elapsed >= 0"],
                       capture_output=True, text=True, env=env_with(), timeout=20)
    lines = r.stdout.split("\n")
    tr.check("system.time shows R's table when not assigned, nothing when assigned; t$elapsed is the seconds",
             len(lines) == 4 and lines[0].split() == ["user", "system", "elapsed"] and len(lines[1].split()) == 3
             and lines[2] == "TRUE", repr(r.stdout))
    script = tempfile.NamedTemporaryFile("w", suffix=".mls", delete=False)
    script.write("1 + 2\n")
    script.close()
    r = subprocess.run([MLS, script.name], capture_output=True, text=True, env=env_with(), timeout=20)
    os.unlink(script.name)
    tr.check("a script file does not echo values (as Rscript file.R)", r.stdout == "" and r.returncode == 0, r.stdout)


def check_progress():
    code = "s = 0\nfor (i in progress(1:30)) s = s + i\nprint(s)\n"
    r = subprocess.run([MLS, "-"], input=code, capture_output=True, text=True, env=env_with(), timeout=20)
    tr.check("progress() in a pipe: stdout as without it, nothing on stderr",
             r.stdout == "465\n" and r.stderr == "" and r.returncode == 0, repr((r.stdout, r.stderr)))
    master, slave = pty.openpty()
    p = subprocess.Popen([MLS, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave,
                         env=env_with(COLUMNS="60"))
    os.close(slave)
    out, _ = p.communicate(code.encode(), timeout=20)
    err, _ = read_until(master, rb"\n", 5)
    os.close(master)
    bar = err.decode("utf-8", "replace")
    tr.check("progress() at a terminal draws a bar on stderr that ends at 30/30 100%",
             out == b"465\n" and "30/30 100%" in bar and "[" in bar and "=" in bar, repr(bar))
    last = bar.replace("\x1b[K", "").rstrip("\r\n").split("\r")[-1]
    tr.check("the bar fits the terminal's width (COLUMNS=60)", 0 < len(last) < 60, repr(last))
    # stdout and stderr on one terminal: print() erases the bar before its line, and an error
    # inside the loop starts on a line of its own
    master, slave = pty.openpty()
    code2 = 'for (i in progress(1:3)) { print(i * 10); if (i == 2) stop("boom") }\n'
    p = subprocess.Popen([MLS, "-"], stdin=subprocess.PIPE, stdout=slave, stderr=slave, env=env_with(COLUMNS="60"))
    os.close(slave)
    p.communicate(code2.encode(), timeout=20)
    both, _ = read_until(master, rb"\^~+", 5)
    os.close(master)
    t = both.decode("utf-8", "replace")
    tr.check("print() in a loop with a bar erases the bar first (no text glued to it)",
             "\r\x1b[K10\r\n" in t and "\r\x1b[K20\r\n" in t, repr(t))
    tr.check("an error inside a loop with a bar starts on its own line",
             "\r\n<stdin>:1:" in t and "error: boom" in t and p.returncode == 1, repr(t))


def check_repl(home):
    s = tr.start(home)
    tr.fcntl.ioctl(s.fd, tr.termios.TIOCSWINSZ, tr.struct.pack("HHHH", 50, 60, 0, 0))   # 60 columns
    s.settle()
    out = s.run("matrix(1:6, rows=2, cols=3)")
    tr.check("a matrix prints R-style at the terminal ([,j] over columns, [i,] before rows)",
             re.search(r"^\s+\[,1\] \[,2\] \[,3\]\n\[1,\]\s+1\s+2\s+3\n\[2,\]\s+4\s+5\s+6$", out, re.M) is not None, out)
    out = s.run("X = matrix(seq(1, 300) / 7, rows=3, cols=100); X")
    lines = [l for l in out.splitlines() if l.strip()][1:]
    widest = max(len(l) for l in lines) if lines else 999
    tr.check("a wide matrix is cut to the terminal's width, columns elided with ...",
             widest <= 60 and "[,1]" in out and "[,100]" in out and " ... " in out and "[3 x 100 matrix]" in out, out)
    out = s.run("rand(rows=25, cols=2, seed=1)")
    tr.check("a long matrix shows the first and last 10 rows with their labels",
             "[10,]" in out and "[16,]" in out and "[25,]" in out and "[11,]" not in out and "[25 x 2 matrix]" in out, out)
    out = s.run("?nn::adam")
    tr.check("?nn::adam shows the stdlib function's help without a source()",
             "adam = function(p, g, s" in out and "Kingma" in out, out)
    out = s.run('?"%*%"')
    tr.check('?"%*%" explains the matrix product', "The matrix product" in out, out)
    out = s.run("?%*%")
    tr.check("?%*% (unquoted) works too", "The matrix product" in out, out)
    out = s.run("?for")
    tr.check("?for explains the for loop", "for (v in seq) body" in out, out)
    out = s.run("?if")
    tr.check("?if explains if/else", "if (cond) expr [else expr]" in out, out)
    out = s.run("?while")
    tr.check("?while has help", "while (cond) body" in out, out)
    out = s.run("rowSum(X)")
    tr.check("a misspelt function suggests the nearest at the prompt",
             "could not find function 'rowSum'; did you mean 'rowSums'?" in out, out)
    s.run("learning_rate = 0.1")
    out = s.run("learning_rat * 2")
    tr.check("a misspelt variable suggests a session variable", "did you mean 'learning_rate'?" in out, out)
    s.send("quit()\r")
    s.wait()

    pager = os.path.join(home, "pager.sh")
    with open(pager, "w") as f:
        f.write("#!/bin/sh\nsed 's/^/PAGED: /'\n")
    os.chmod(pager, 0o755)
    s = tr.start(home, env={"PAGER": pager})
    out = s.run("help(sum)")
    tr.check("help() at a terminal goes through $PAGER", re.search(r"^PAGED: sum\(", out, re.M) is not None, out)
    out = s.run("?for")
    tr.check("?for goes through $PAGER too", "PAGED: for (v in seq) body" in out, out)
    out = s.run("1 + 1")
    tr.check("other output does not go through the pager", re.search(r"^2$", out, re.M) is not None and "PAGED" not in out, out)
    out = s.run('help("nothing_like_this")')
    tr.check("a help error is reported, not paged", "no help for 'nothing_like_this'" in out and "PAGED" not in out, out)
    s.send("quit()\r")
    tr.check("the session ends cleanly", s.wait() == 0, s.text()[-300:])
    r = subprocess.run([MLS, "-e", "help(sum)"], capture_output=True, text=True, env=env_with(PAGER=pager), timeout=20)
    tr.check("help() into a pipe is not paged", r.stdout.startswith("sum(") and "PAGED" not in r.stdout, r.stdout)


def main():
    with tempfile.TemporaryDirectory() as home:
        check_live_output(home)
        check_dash_e()
        check_progress()
        check_repl(home)
    print("%d passed, %d failed" % (tr.passed, tr.failed))
    return 1 if tr.failed else 0


if __name__ == "__main__":
    sys.exit(main())
