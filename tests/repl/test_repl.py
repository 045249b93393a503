#!/usr/bin/python3
"""test_repl.py — drives `mls` (the REPL) through a pseudo-terminal and checks issue #5 point by
point: echo and ans, multi-line input, errors, Ctrl-C, completion, help, ls, history, exit.

usage: tests/repl/test_repl.py [path/to/mls]     (default ./mls; Python 3 standard library only)
Prints one line per check and "N passed, N failed"; exits 1 when a check failed.
"""
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

MLS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "./mls")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 5.0
UP = "\x1b[A"

# Escape sequences readline writes (cursor moves, bracketed paste, keypad mode).
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>()][0-9A-Za-z]?|\x1b[78]")

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s" % name)
        if detail:
            for line in detail.rstrip().splitlines()[-15:]:
                print("     | %s" % line)


def clean(data):
    text = ANSI.sub("", data.decode("utf-8", "replace"))
    text = text.replace("\x07", "")
    text = re.sub(r".\x08", "", text)
    return text.replace("\r", "")


class Session:
    """One mls REPL on a pty: send keys, wait for text, collect the exit status."""

    def __init__(self, home, cwd=None, env=None):
        self.home = home
        e = dict(os.environ)
        e.update({"HOME": home, "TERM": "xterm", "INPUTRC": "/dev/null", "MLS_PATH": os.path.join(ROOT, "stdlib")})
        e.pop("MLS_HISTFILE", None)
        e.pop("PAGER", None)            # help() would page through it (test_prompt.py checks that)
        if env:
            e.update(env)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(cwd or home)
                os.execve(MLS, [MLS], e)
            finally:
                os._exit(127)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.raw = b""
        self.pos = 0          # expect() searches the cleaned text from here
        self.status = None

    def read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            raise EOFError
        self.raw += data
        return True

    def text(self):
        return clean(self.raw)

    def expect(self, pattern, timeout=TIMEOUT):
        """Waits until pattern (a regex) appears after the last match; returns the match or None."""
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        while True:
            t = self.text()
            m = rx.search(t, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.time()
            if left <= 0:
                return None
            try:
                self.read(left)
            except EOFError:
                t = self.text()
                m = rx.search(t, self.pos)
                if m:
                    self.pos = m.end()
                return m

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def run(self, line, timeout=TIMEOUT):
        """Types a line, waits for the next prompt, returns the output in between."""
        self.settle()
        start = len(self.text())
        self.pos = start
        self.send(line + "\r")
        m = self.expect(r"\n> ", timeout)
        end = m.start() if m else len(self.text())
        return self.text()[start:end]

    def settle(self, quiet=0.05):
        """Reads until the terminal has been quiet for a moment."""
        try:
            while self.read(quiet):
                pass
        except EOFError:
            pass

    def wait(self, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                self.read(0.05)
            except EOFError:
                pass
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                self.settle()                      # what it wrote just before exiting
                os.close(self.fd)
                t = self.text()
                if "Sanitizer" in t or "runtime error:" in t:     # an ASan/UBSan build's report
                    at = max(t.find("Sanitizer"), t.find("runtime error:"))
                    check("no sanitizer report", False, t[at:at + 800])
                return self.status
        self.kill()
        return None

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


def interrupt_line(s, line, wait, limit):
    """Sends line to session s at a fresh prompt, Ctrl-C wait seconds later; returns the match of
    "interrupted ... >" within limit seconds (None if none) and the seconds it took."""
    s.settle()
    s.pos = len(s.text())
    s.send(line + "\r")
    time.sleep(wait)
    t0 = time.time()
    s.send("\x03")
    m = s.expect(r"interrupted(.*\n)*?> ", limit)
    return m, time.time() - t0


def start(home, **kw):
    s = Session(home, **kw)
    ok = s.expect(r"MLS .*\n(.*\n)*?> ", 10) is not None
    if not ok:
        check("session starts with a banner and a prompt", False, s.text())
    return s


def main():
    if not os.access(MLS, os.X_OK):
        print("mls not found at %s" % MLS)
        return 2
    home = tempfile.mkdtemp(prefix="mls-repl-")
    try:
        run_checks(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def run_checks(home):
    # 7. not a terminal: a script, no prompt, no banner
    p = subprocess.run([MLS], input="print(1)\n", capture_output=True, text=True, timeout=20)
    check("piped stdin runs as a script (echo 'print(1)' | mls)", p.stdout == "1\n" and p.returncode == 0,
          repr(p.stdout) + repr(p.stderr))
    p = subprocess.run([MLS], input="x = 2\nx + 1\n", capture_output=True, text=True, timeout=20)
    check("piped stdin does not echo expression statements", p.stdout == "", repr(p.stdout))

    s = start(home)

    # 4. echo and ans
    out = s.run("1 + 2")
    check("expression statement echoes its value", re.search(r"^3$", out, re.M) is not None, out)
    out = s.run("ans * 10")
    check("ans holds the last printed value", re.search(r"^30$", out, re.M) is not None, out)
    out = s.run('"hi"')
    check("a string echoes in double quotes", '"hi"' in out.split("\n", 1)[-1], out)
    out = s.run("z = 5")
    check("an assignment prints nothing", out.strip() == "z = 5", out)

    # 3. multi-line input
    s.settle()
    s.pos = len(s.text())
    s.send("if (TRUE) {\r")
    ok1 = s.expect(r"\n\+ ") is not None
    s.send("print(111)\r")
    ok2 = s.expect(r"\n\+ ") is not None
    s.send("}\r")
    ok3 = s.expect(r"\n111\n> ") is not None
    check("open brace continues on '+ ' and runs when closed", ok1 and ok2 and ok3, s.text()[-300:])
    s.settle()
    s.pos = len(s.text())
    s.send("max(1,\r")
    ok1 = s.expect(r"\n\+ ") is not None
    s.send("3)\r")
    ok2 = s.expect(r"\n3\n> ") is not None
    check("open parenthesis continues", ok1 and ok2, s.text()[-300:])
    s.settle()
    s.pos = len(s.text())
    s.send("w = 1 +\r")
    ok1 = s.expect(r"\n\+ ") is not None
    s.send("41\r")
    ok2 = s.expect(r"\n> ") is not None
    out = s.run("w")
    check("trailing operator continues", ok1 and ok2 and re.search(r"^42$", out, re.M) is not None, s.text()[-300:])
    s.settle()
    s.pos = len(s.text())
    s.send("if (w > 0)\r")
    ok1 = s.expect(r"\n\+ ") is not None
    s.send("print(\"body\")\r")
    ok2 = s.expect(r"\nbody\n> ") is not None
    check("if (c) without a body continues", ok1 and ok2, s.text()[-300:])

    # 5. errors: caret, and variables survive
    out = s.run("z + undefined_thing")
    check("an error shows location and caret", re.search(r"<stdin>:1:\d+: error: .*undefined_thing", out) is not None
          and re.search(r"^\s*\^", out, re.M) is not None, out)
    out = s.run("z")
    check("a variable survives an error", re.search(r"^5$", out, re.M) is not None, out)
    out = s.run("1 +* 2")
    check("a syntax error is reported, not continued", "error" in out and "+ " not in out.split("\n")[-1], out)

    # 5. Ctrl-C during a computation
    s.run("keep = 7")
    s.settle()
    s.pos = len(s.text())
    s.send("x = 0; while (TRUE) x = x + 1\r")
    time.sleep(0.4)
    s.settle()
    t0 = time.time()
    s.send("\x03")
    m = s.expect(r"interrupted(.*\n)*?> ", 3)
    dt = time.time() - t0
    check("Ctrl-C stops a running loop and returns to the prompt within 0.5 s",
          m is not None and dt < 0.5, "%.3f s\n%s" % (dt, s.text()[-300:]))
    out = s.run("x > 0 && keep == 7")
    check("variables survive Ctrl-C (x counted, keep kept)", re.search(r"^TRUE$", out, re.M) is not None, out)
    m, dt = interrupt_line(s, "for (i in 1:100000000) { q = i }", 0.3, 3)
    check("Ctrl-C stops a for loop too", m is not None and dt < 0.5, "%.3f s\n%s" % (dt, s.text()[-300:]))
    # Ctrl-C in a builtin filling a large matrix (issue 25): back at the prompt, nothing after
    # it in the line ran, nothing was assigned, and the next input runs (the flag was cleared)
    s.settle()
    s.pos = len(s.text())
    s.send('big = rep(1:10, 1e7); print("after the fill")\r')
    time.sleep(0.5)
    s.send("\x03")
    m = s.expect(r"interrupted(.*\n)*?> ", 30)
    seen = s.text()[-400:]
    out = s.run('exists("big"); 2 + 3')
    check("Ctrl-C in a fill returns to the prompt, and nothing after it runs",
          m is not None and re.search(r"^after the fill$", seen, re.M) is None and re.search(r"^FALSE$", out, re.M) is not None
          and re.search(r"^5$", out, re.M) is not None, seen + "\n" + out)

    # Ctrl-C in a sparse factorization (UMFPACK's LU of a 3-D convection-diffusion matrix, 64000
    # rows, seconds of work; issue 28): CHOLMOD and UMFPACK cannot be stopped, so it runs on a worker
    # thread and the op ends at once: back at the prompt within 0.5 s, nothing after it ran, and the
    # next sparse solves (CHOLMOD's and UMFPACK's, while the abandoned worker may still run) give
    # their values: sum(solve(2 I, 1)) = 600, and 1200 rows of [4 2] over [0 4] blocks sum to 225
    out = s.run("k = 40; n = k^3; i = seq(1, n); x = (i - 1) %% k; y = floor((i - 1) / k) %% k; "
                "a = i[x < k - 1]; b = i[y < k - 1]; c = i[i <= n - k * k]; "
                "N = table(c(i, a, a + 1, b, b + k, c, c + k * k), c(i, a + 1, a, b + k, b, c + k * k, c), "
                "c(rep(6.5, n), rep(-1.3, length(a)), rep(-0.7, length(a)), rep(-1, 2 * length(b) + 2 * length(c))), n, n); "
                "nnz(N)", 60)
    ok0 = re.search(r"^438400$", out, re.M) is not None
    m, dt = interrupt_line(s, 'xs = solve(N, matrix(1, n, 1)); print("after the solve")', 1.0, 3)
    seen = s.text()[-400:]
    out = s.run('exists("xs"); T = table(1:1200, 1:1200, rep(2, 1200), 1200, 1200); sum(solve(T, matrix(1, 1200, 1)))', 30)
    out2 = s.run('j = seq(1, 1200, 2); U = table(c(1:1200, j), c(1:1200, j + 1), c(rep(4, 1200), rep(2, 600)), 1200, 1200); '
                 'sum(solve(U, matrix(1, 1200, 1)))', 30)
    check("Ctrl-C in a sparse LU returns to the prompt within 0.5 s; nothing after it ran; later sparse solves work",
          ok0 and m is not None and dt < 0.5 and re.search(r"^after the solve$", seen, re.M) is None
          and re.search(r"^FALSE$", out, re.M) is not None and re.search(r"^600$", out, re.M) is not None
          and re.search(r"^225$", out2, re.M) is not None,
          "%.3f s\n%s\n%s\n%s" % (dt, seen, out, out2))

    # 5. Ctrl-C at the prompt clears the line; at '+ ' it drops the chunk
    s.settle()
    s.pos = len(s.text())
    s.send("this is not code")
    s.settle()
    s.send("\x03")
    ok1 = s.expect(r"\n> ") is not None
    out = s.run("10 + 1")
    check("Ctrl-C at the prompt clears a half-typed line", ok1 and re.search(r"^11$", out, re.M) is not None
          and "error" not in out, s.text()[-300:])
    s.settle()
    s.pos = len(s.text())
    s.send("{\r")
    s.expect(r"\n\+ ")
    s.send("dropped = 1\r")
    s.expect(r"\n\+ ")
    s.send("\x03")
    ok1 = s.expect(r"\n> ") is not None
    out = s.run('exists("dropped")')
    check("Ctrl-C at '+ ' drops the unfinished chunk", ok1 and re.search(r"^FALSE$", out, re.M) is not None, out)

    # a window resize while typing is not an interrupt
    s.settle()
    s.pos = len(s.text())
    s.send("100 +")
    s.settle()
    fcntl.ioctl(s.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    s.settle()
    out = s.run(" 5")
    check("a window resize keeps the line being typed", re.search(r"^105$", out, re.M) is not None, s.text()[-200:])

    # 2. completion
    out = s.run("rowSu\t(matrix(1, rows=2, cols=3))")
    # at a terminal a matrix prints R-style, with [i,] row labels (issue 13, docs/repl.md)
    check("TAB completes a builtin (rowSu -> rowSums)", len(re.findall(r"^\[\d,\]\s+3$", out, re.M)) == 2, out)
    s.run("my_long_variable = 123")
    out = s.run("my_lo\t + 1")
    check("TAB completes a variable", re.search(r"^124$", out, re.M) is not None, out)
    s.run("cfg = list(learning_rate = 0.5, epochs = 3)")
    out = s.run("cfg$lea\t * 2")
    check("TAB completes list members after $", re.search(r"^1$", out, re.M) is not None, out)
    out = s.run("dbl = funct\t(v) v * 2; dbl(21)")
    check("TAB completes a keyword (funct -> function)", re.search(r"^42$", out, re.M) is not None, out)
    with open(os.path.join(home, "my_data_file.csv"), "w") as f:
        f.write("1,2\n3,4\n")
    out = s.run('path = "my_data_f\t; path')
    check("TAB completes a file name inside a string", '"my_data_file.csv"' in out, out)
    os.makedirs(os.path.join(home, "runs", "exp_one"))
    with open(os.path.join(home, "runs", "exp_one", "weights_final.csv"), "w") as f:
        f.write("1\n")
    out = s.run('p = "runs/exp_o\tweights_fi\t; p')
    check("TAB completes a relative path a directory at a time", '"runs/exp_one/weights_final.csv"' in out, out)
    out = s.run('p = "' + home + '/runs/exp_o\t"; p')
    check("TAB completes an absolute path (not from the working directory)", '"' + home + '/runs/exp_one/"' in out, out)
    out = s.run('p = "/et\t"; p')
    check("TAB completes an absolute path at the root", '"/etc/"' in out, out)
    out = s.run('p = "~/my_data_f\t; p')
    check("TAB completes a path under ~ (HOME)", '"~/my_data_file.csv"' in out, out)
    s.settle()
    s.pos = len(s.text())
    s.send("linsp\t")
    m = s.expect(r"linspace", 3)
    s.send("\x03")
    s.expect(r"\n> ")
    check("TAB completes a stdlib function (linsp -> linspace)", m is not None, s.text()[-200:])
    s.run("source(\"utils.mls\") as u")
    out = s.run("nrow(u::ey\t(3))")
    check("TAB completes a namespace member after ::", re.search(r"^3$", out, re.M) is not None, out)
    s.settle()
    s.pos = len(s.text())
    s.send("col\t\t")
    m = s.expect(r"colMeans[\s\S]*colSums", 3)   # (and colMaxs, colSds, ...: readline's layout)
    s.send("\x03")
    s.expect(r"\n> ")
    check("TAB TAB lists ambiguous completions", m is not None, s.text()[-300:])

    # 6. help, ?name, ls(), system.time
    out = s.run("?sum")
    check("?sum shows the builtin's signature and text", "sum(x)" in out and "Sum of all elements" in out, out)
    out = s.run("??sparse")
    check("??word lists the help pages that mention it (nnz, sparsity)", "Help pages matching 'sparse'" in out
          and re.search(r"^  nnz ", out, re.M) is not None and re.search(r"^  sparsity ", out, re.M) is not None, out)
    out = s.run("??regression")
    check("??word finds builtins written in MLS by their #' lines", re.search(r"^  lmCG ", out, re.M) is not None, out)
    out = s.run("??qqzzy")
    check("??word with no match says so", "No help page matches 'qqzzy'." in out, out)
    out = s.run("help(sum)")
    check("help(sum) works too", "Sum of all elements" in out, out)
    out = s.run("help()")
    check("help() lists topics", "rowSums" in out and "solve" in out, out)
    s.settle()
    s.pos = len(s.text())
    s.send("#' Doubles a number.\r")
    ok1 = s.expect(r"\n\+ ") is not None
    s.send("#' @param x anything numeric\r")
    s.expect(r"\n\+ ")
    s.send("twice = function(x) {\r")
    s.expect(r"\n\+ ")
    s.send("x * 2\r")
    s.expect(r"\n\+ ")
    s.send("}\r")
    s.expect(r"\n> ")
    out = s.run("help(twice)")
    check("help(f) shows a session function's signature and #' lines",
          ok1 and "twice = function(x)" in out and "Doubles a number." in out and "@param x" in out, out)
    out = s.run("?twice")
    check("?f works for a user function", "Doubles a number." in out, out)
    s.run("M = matrix(0, rows=3, cols=4)")
    out = s.run("ls()")
    check("ls() lists variables with types and shapes",
          re.search(r"^M\s+3x4 matrix", out, re.M) is not None and re.search(r"^cfg\s+list of 2", out, re.M) is not None, out)
    out = s.run("system.time(sum(rand(rows=200, cols=200)))")
    check("system.time(expr) reports elapsed time", "elapsed" in out, out)

    # 1, 5. history across sessions; Ctrl-D exits 0
    s.settle()
    s.pos = len(s.text())
    s.send("if (TRUE) {\r")
    s.expect(r"\n\+ ")
    s.send("hist_marker = 11\r")
    s.expect(r"\n\+ ")
    s.send("}\r")
    s.expect(r"\n> ")
    s.send("\x04")
    st = s.wait()
    check("Ctrl-D exits with status 0", st == 0, "status %r" % (st,))
    hist = os.path.join(home, ".mls_history")
    try:
        with open(hist) as f:
            htext = f.read()
    except OSError:
        htext = ""
    entries = [e.strip("\n") for e in re.split(r"^#\d+\n", htext, flags=re.M) if e.strip()]
    check("history file holds a multi-line chunk as one entry",
          "if (TRUE) {\nhist_marker = 11\n}" in entries and "1 + 2" in entries, htext[-400:])

    s = start(home)
    s.settle()
    s.pos = len(s.text())
    s.send(UP + "\r")
    s.expect(r"\n> ")
    out = s.run("hist_marker")
    check("history reloads in a new session (up-arrow runs the multi-line entry)",
          re.search(r"^11$", out, re.M) is not None, s.text()[-300:])
    s.send("quit(3)\r")
    st = s.wait()
    check("quit(3) exits with status 3", st == 3, "status %r" % (st,))
    with open(hist) as f:
        htext = f.read()
    check("quit() saves the history", "quit(3)" in htext, htext[-200:])

    # the terminal goes away (SIGHUP) while a loop runs: the loop stops, history is saved
    s = start(home)
    s.run("hup_marker = 1")
    s.send("while (TRUE) hup_marker = hup_marker + 1\r")
    time.sleep(0.2)
    os.kill(s.pid, signal.SIGHUP)
    st = s.wait()
    with open(hist) as f:
        htext = f.read()
    check("a hangup stops the session and saves the history",
          st == 128 + signal.SIGHUP and "hup_marker = 1" in htext and "while (TRUE) hup_marker" in htext,
          "status %r\n%s" % (st, htext[-300:]))

    # $MLS_HISTFILE
    hf = os.path.join(home, "other_hist")
    s = start(home, env={"MLS_HISTFILE": hf})
    s.run("42")
    s.send("quit()\r")
    st = s.wait()
    check("$MLS_HISTFILE chooses the history file", st == 0 and os.path.exists(hf) and "42" in open(hf).read())


if __name__ == "__main__":
    sys.exit(main())
