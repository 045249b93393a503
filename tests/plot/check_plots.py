#!/usr/bin/python3
"""check_plots.py — end-to-end checks of the plot builtins through the `mls` command (issue 13):
figures written at the end of a script and by dev.off(), PNGs decoded here with zlib alone (no
cairo, no PIL: an independent reader) and their pixels checked, SVG elements counted with
xml.etree, located errors on stderr, and the REPL writing the open figure after each input.

usage: tests/plot/check_plots.py [path/to/mls]      (run by `make plot-test`)
Prints one line per check and "N passed, N failed"; exits 1 when a check failed.
"""
import os
import pty
import shutil
import select
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

MLS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "./mls")
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def run(code, cwd, name="s.mls"):
    with open(os.path.join(cwd, name), "w") as f:
        f.write(code)
    p = subprocess.run([MLS, name], cwd=cwd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):                     # undo the filter (PNG spec, section 9)
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def main():
    tmp = tempfile.mkdtemp(prefix="mls_plot_")

    # 1. a script's open figure is written at its end, under the default name, which is said
    st, out, err = run('plot([0, 10], [1, 1], type="l", col="red", ylim=[0, 2], width=300, height=200)\n', tmp)
    png = os.path.join(tmp, "mlsplot001.png")
    check("script end writes mlsplot001.png", st == 0 and os.path.exists(png) and out == "plot: mlsplot001.png\n",
          repr((st, out, err)))
    if os.path.exists(png):
        w, h, rows = read_png(png)
        check("PNG size from its header", (w, h) == (300, 200), str((w, h)))
        red = [(x, y) for y in range(h) for x in range(w)
               if rows[y][x][0] > 200 and rows[y][x][0] - rows[y][x][1] > 60 and rows[y][x][1] == rows[y][x][2]]
        # the region's top and bottom edges: 4.1 and 5.1 lines of 14.4 px, on pixel centres;
        # y = 1 is the middle of [0, 2] +- 4%, so the middle of the region (antialiased: the
        # 1-pixel line may be shared by two rows, half red each)
        top, bot = int(4.1 * 14.4), int(200 - 5.1 * 14.4)
        mid = (top + bot) / 2
        ys = set(y for _, y in red)
        check("y = 1 lands in the middle row band", red and all(abs(y - mid) <= 1.5 for y in ys),
              "rows %s, want %.1f" % (sorted(ys), mid))
        dark_top = sum(1 for x in range(w) if max(rows[top][x]) < 60)
        check("the box's top edge is a crisp dark row", dark_top > w / 2, str(dark_top))

    # 2. dev.off() writes at once and returns the name; a second figure gets the next number; the
    # numbering starts after the mlsplot001.png check 1 left (a new session overwrites nothing),
    # and a figure with file= uses no number
    st, out, err = run('plot(seq(1, 3))\nprint(dev.off())\nplot(1, file="named.png")\nplot(seq(3, 1), type="b")\n', tmp, "t2.mls")
    check("dev.off() names the file; numbers go on from the files there; file= takes none",
          st == 0 and out == "plot: mlsplot002.png\nmlsplot002.png\nplot: mlsplot003.png\n", repr((st, out, err)))

    # 3. SVG: one <path> per point symbol (pch=1) and per line, outside the glyph definitions
    st, out, err = run('plot(seq(1, 7), [3, 1, 4, 1, 5, 9, 2], col="blue", file="p.svg")\n'
                       'lines([1, 7], [1, 9], col="red")\n', tmp, "t3.mls")
    svg = os.path.join(tmp, "p.svg")
    if st == 0 and os.path.exists(svg):
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        defs = set(id(e) for d in root.iter(ns + "defs") for e in d.iter())
        paths = [e for e in root.iter(ns + "path") if id(e) not in defs]
        blue = [e for e in paths if "stroke:rgb(0%,0%,100%)" in e.get("style", "")]
        red = [e for e in paths if "stroke:rgb(100%,0%,0%)" in e.get("style", "")]
        check("SVG: 7 blue circles and 1 red line", len(blue) == 7 and len(red) == 1, str((len(blue), len(red))))
        check("SVG: nothing printed for a named file", out == "", repr(out))
    else:
        check("SVG written", False, repr((st, out, err)))

    # 4. errors are located (file:line:col) and stop the script; no file is left behind
    st, out, err = run('x = seq(1, 3)\nplot(x, file="fig.jpg")\n', tmp, "bad.mls")
    check("bad extension: located error",
          st == 1 and err.startswith("bad.mls:2:1: error: bad argument #10 to 'plot' (file 'fig.jpg' must end in .png, .svg or .pdf)")
          and not os.path.exists(os.path.join(tmp, "fig.jpg")), repr(err))
    st, out, err = run('x = seq(1, 3)\n  points(x, seq(1, 4))\n', tmp, "bad2.mls")
    check("length mismatch: located error", st == 1 and err.startswith("bad2.mls:2:3: error: points: x and y lengths differ (3 and 4)"),
          repr(err))

    # 5. the REPL writes the open figure after each input
    rdir = tempfile.mkdtemp(prefix="mls_plot_repl_")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(rdir)
        os.environ.update({"HOME": rdir, "TERM": "dumb", "INPUTRC": "/dev/null"})
        os.execv(MLS, [MLS])
    buf = b""

    def wait_for(text, timeout=10.0):
        nonlocal buf
        end = time.time() + timeout
        while text not in buf and time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    buf += os.read(fd, 4096)
                except OSError:
                    break
        return text in buf

    wait_for(b"> ")
    os.write(fd, b"plot(seq(1, 5))\n")
    said = wait_for(b"plot: mlsplot001.png")
    check("REPL: the figure is written after the input", said and os.path.exists(os.path.join(rdir, "mlsplot001.png")),
          repr(buf[-200:]))
    os.write(fd, b"quit()\n")
    os.waitpid(pid, 0)
    os.close(fd)
    shutil.rmtree(rdir, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
