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

    # 6. the builtins of issue 30: pixels where R's coordinates put them
    def region(w, h, left=0, cols=1, right=2.1):   # a panel's plot region, as render.c rounds it
        cw = w / cols
        return (int(left * cw + 4.1 * 14.4), int(left * cw + cw - right * 14.4), int(4.1 * 14.4), int(h - 5.1 * 14.4))

    def xpix(v, usr, reg):
        return reg[0] + 0.5 + (v - usr[0]) / (usr[1] - usr[0]) * (reg[1] - reg[0])

    def ypix(v, usr, reg):
        return reg[3] + 0.5 - (v - usr[0]) / (usr[1] - usr[0]) * (reg[3] - reg[2])

    def is_col(p, rgb, tol=40):
        return all(abs(p[k] - rgb[k]) <= tol for k in range(3))

    def pixels(rows, rgb, box=None):
        w, h = len(rows[0]), len(rows)
        x0, x1, y0, y1 = box or (0, w - 1, 0, h - 1)
        return [(x, y) for y in range(y0, y1 + 1) for x in range(x0, x1 + 1) if is_col(rows[y][x], rgb)]

    code = ('plot([0, 10], [0, 2], type="n", file="ab.png")\nabline(h=1, col="blue")\nabline(v=2.5, col="red")\n'
            'abline(0, 0.2, col=3)\n')
    st, out, err = run(code, tmp, "t6.mls")
    w, h, rows = read_png(os.path.join(tmp, "ab.png"))
    reg = region(w, h)
    inner = [(x, y) for y in range(reg[2] + 2, reg[3] - 1) for x in range(reg[0] + 2, reg[1] - 1)]
    # (antialiased: a 1-pixel line on a pixel edge is two rows half coloured)
    blue = [(x, y) for x, y in inner if rows[y][x][2] > 200 and rows[y][x][2] - rows[y][x][0] > 60]
    red = [(x, y) for x, y in inner if rows[y][x][0] > 200 and rows[y][x][0] - rows[y][x][2] > 60]
    yb, xr = ypix(1, (-0.08, 2.08), reg), xpix(2.5, (-0.4, 10.4), reg)
    check("abline(h=1): a blue row at R's y", blue and all(abs(y - yb) <= 1.5 for _, y in blue)
          and len(set(x for x, _ in blue)) > (reg[1] - reg[0]) * 0.9, str(sorted(set(y for _, y in blue))))
    check("abline(v=2.5): a red column at R's x", red and all(abs(x - xr) <= 1.5 for x, _ in red), str(sorted(set(x for x, _ in red))))
    green = pixels(rows, (0x61, 0xD0, 0x4F), (reg[0] + 2, reg[1] - 2, reg[2] + 2, reg[3] - 2))
    ok = bool(green) and all(abs(y - ypix(0.2 * (-0.4 + (x + 0.5 - reg[0]) / (reg[1] - reg[0]) * 10.8), (-0.08, 2.08), reg)) <= 2
                            for x, y in green)
    check("abline(a, b): the line y = a + b x", ok, str(green[:5]))

    # image(Z): cells coloured by value, rows of Z along x (R's orientation), no margin around them
    st, out, err = run('image([1, 2; 3, 4], col=list("red", "blue"), key=FALSE, file="im.png")\n', tmp, "t7.mls")
    w, h, rows = read_png(os.path.join(tmp, "im.png"))
    reg = region(w, h)
    qx = [reg[0] + (reg[1] - reg[0]) // 4, reg[1] - (reg[1] - reg[0]) // 4]
    qy = [reg[3] - (reg[3] - reg[2]) // 4, reg[2] + (reg[3] - reg[2]) // 4]   # bottom, top
    want = {(0, 0): (255, 0, 0), (0, 1): (255, 0, 0), (1, 0): (0, 0, 255), (1, 1): (0, 0, 255)}  # Z[i, j] at (x_i, y_j)
    got = {(i, j): rows[qy[j]][qx[i]] for i in range(2) for j in range(2)}
    check("image: Z[i, j] at (x_i, y_j) in the colour of its value", all(is_col(got[k], want[k], 5) for k in want), str(got))
    check("image: the cells fill the region (xaxs=\"i\")", is_col(rows[reg[2] + 2][reg[0] + 2], (255, 0, 0), 5)
          and is_col(rows[reg[3] - 2][reg[1] - 2], (0, 0, 255), 5), str((rows[reg[2] + 2][reg[0] + 2], rows[reg[3] - 2][reg[1] - 2])))
    st, out, err = run('image(matrix(seq(1, 6), rows=2, cols=3), file="imk.png")\n', tmp, "t7b.mls")
    w, h, rows = read_png(os.path.join(tmp, "imk.png"))
    reg = region(w, h, right=6.1)
    kx = reg[1] + int(1.5 * 14.4)
    top, bot = rows[reg[2] + 3][kx], rows[reg[3] - 3][kx]
    check("image: the key runs from R's first colour (bottom) to its last (top)",
          is_col(bot, (0xFF, 0xFF, 0xC8), 3) and is_col(top, (0x7D, 0x00, 0x25), 3), str((bot, top)))

    # barplot: R's bars are [0.2, 1.2], [1.4, 2.4], [2.6, 3.6], usr x [0.064, 3.736], y [-0.05, 5]
    st, out, err = run('b = barplot([3, 5, 2], col=list("red", "green", "blue"), file="bp.png")\nprint(b)\n', tmp, "t8.mls")
    check("barplot returns R's midpoints", st == 0 and out.split() == ["0.7", "1.9", "3.1"], repr((out, err)))
    w, h, rows = read_png(os.path.join(tmp, "bp.png"))
    reg = region(w, h)
    ux, uy = (0.064, 3.736), (-0.05, 5)
    mid = [int(xpix(m, ux, reg)) for m in (0.7, 1.9, 3.1)]
    gap = int(xpix(1.3, ux, reg))
    ymid = int(ypix(1, uy, reg))
    check("barplot: each bar's colour at its midpoint", is_col(rows[ymid][mid[0]], (255, 0, 0), 5)
          and is_col(rows[ymid][mid[1]], (0, 255, 0), 5) and is_col(rows[ymid][mid[2]], (0, 0, 255), 5),
          str([rows[ymid][m] for m in mid]))
    check("barplot: white between bars", is_col(rows[ymid][gap], (255, 255, 255), 5), str(rows[ymid][gap]))
    ytop = ypix(5, uy, reg)
    greens = [y for y in range(reg[2], reg[3]) if is_col(rows[y][mid[1]], (0, 255, 0), 5)]
    check("barplot: the bar of 5 reaches the top (yaxs=\"i\")", greens and abs(min(greens) - ytop) <= 2, str((greens[:1], ytop)))

    # boxplot: the median (lwd 3) of 1..5 at 3, in the middle of the y range 1..5 +- 4%
    st, out, err = run('s = boxplot(seq(1, 5), file="bx.png")\nprint(s$stats)\n', tmp, "t9.mls")
    check("boxplot returns R's boxplot.stats", st == 0 and out.split() == ["1", "2", "3", "4", "5"], repr((out, err)))
    w, h, rows = read_png(os.path.join(tmp, "bx.png"))
    reg = region(w, h)
    cx = (reg[0] + reg[1]) // 2 + 20
    dark = [y for y in range(reg[2] + 2, reg[3] - 1) if max(rows[y][cx]) < 160]
    ym = ypix(3, (1 - 0.16, 5 + 0.16), reg)
    band = [y for y in dark if abs(y - ym) <= 3]
    check("boxplot: a 3-pixel median line at R's y", len(band) >= 3, str((dark, ym)))

    # par(mfrow=[1, 2]): two plots side by side in one file; the third starts a new one
    st, out, err = run('par(mfrow=[1, 2])\nplot(seq(1, 3), file="mf.png")\nplot(seq(1, 3), col="red", pch=15)\n'
                       'plot(seq(1, 3))\n', tmp, "t10.mls")
    w, h, rows = read_png(os.path.join(tmp, "mf.png"))
    left, right = region(w, h, 0, 2), region(w, h, 1, 2)
    ymid = (left[2] + left[3]) // 2
    check("mfrow: the left box's right edge and the right box's left edge",
          max(rows[ymid][left[1]]) < 60 and max(rows[ymid][right[0]]) < 60 and max(rows[ymid][left[1] + 20]) > 200,
          str((rows[ymid][left[1]], rows[ymid][right[0]])))
    reds = pixels(rows, (255, 0, 0))
    check("mfrow: the second plot is drawn in the right half", reds and min(x for x, _ in reds) > w / 2, str(reds[:3]))
    check("mfrow: a full page starts a new figure", out.startswith("plot: mlsplot"), repr((out, err)))

    # par() beyond mfrow (issue 30 item 4). The plot region's edges in device pixels are R 4's for
    # the same 640 x 480 device: png(); par(...); plot(1:10); grconvertX(par("usr")[1:2], "user",
    # "device") and grconvertY(par("usr")[3:4], "user", "device"), as (left, right, bottom, top).
    # render.c draws each edge on pixel floor(v): dark there, background two pixels inside.
    def box_where(rows, rbox, name):
        l, r, b, t = (int(v) for v in rbox)
        ym, xm = (t + b) // 2, (l + r) // 2
        got = (max(rows[ym][l]) < 60 and max(rows[ym][r]) < 60 and max(rows[b][xm]) < 60 and max(rows[t][xm]) < 60
               and max(rows[ym][l + 2]) > 200 and max(rows[ym][r - 2]) > 200 and max(rows[b - 2][xm]) > 200
               and max(rows[t + 2][xm]) > 200)
        check(name, got, "want columns %d %d, rows %d %d; dark columns on row %d: %s" %
              (l, r, b, t, ym, [x for x in range(len(rows[0])) if max(rows[ym][x]) < 60]))

    st, out, err = run('par(mar=[2, 3, 1, 1])\nplot(seq(1, 10), file="mar.png")\n', tmp, "t20.mls")
    w, h, rows = read_png(os.path.join(tmp, "mar.png"))
    box_where(rows, (43.2, 625.6, 451.2, 14.4), "par(mar=[2, 3, 1, 1]): the box where R's is")

    # cex=2 doubles the margin lines as well as the text (R: plt 0.1845 0.9055 0.306 0.754)
    st, out, err = run('par(cex=2)\nplot(seq(1, 10), file="cex.png")\n', tmp, "t21.mls")
    w, h, rows = read_png(os.path.join(tmp, "cex.png"))
    box_where(rows, (118.08, 579.52, 333.12, 118.08), "par(cex=2): margins of twice the lines, as R's")
    # and it is the default size of the symbols: a pch=15 square of four times the area
    areas = []
    for c in (1, 2):
        st, out, err = run('par(cex=%d)\nplot(5, 5, pch=15, col="red", file="cexp%d.png")\n' % (c, c), tmp, "t25.mls")
        w, h, rows = read_png(os.path.join(tmp, "cexp%d.png" % c))
        areas.append(len(pixels(rows, (255, 0, 0))))
    check("par(cex=2): symbols of four times the area", areas[0] > 10 and abs(areas[1] / areas[0] - 4) < 0.8, str(areas))

    # mfcol fills by columns: the second plot goes below the first (mfrow would put it right of
    # it); oma=[1, 2, 3, 4] outer margins in lines of cex 0.83, the 2 x 2 page's; bg paints the page
    st, out, err = run('par(mfcol=[2, 2], oma=[1, 2, 3, 4], bg="yellow")\nplot(seq(1, 10), file="mfcol.png")\n'
                       'plot(seq(1, 10), col="red", pch=15)\nlegend("topleft", "a")\n', tmp, "t22.mls")
    w, h, rows = read_png(os.path.join(tmp, "mfcol.png"))
    box_where(rows, (72.907, 282.949, 190.997, 84.859), "mfcol + oma: the first plot's box where R's is")
    box_where(rows, (72.907, 282.949, 407.093, 300.955), "mfcol + oma: the second plot's box, below the first, where R's is")
    reds = pixels(rows, (255, 0, 0))
    check("mfcol: the second plot's points are all inside its box", len(reds) > 50 and
          all(72 < x < 282 and 300 < y < 407 for x, y in reds), str((len(reds), reds[:3])))
    check("bg=\"yellow\": the corners and the page between the panels are yellow",
          all(rows[y][x] == (255, 255, 0) for x, y in ((0, 0), (w - 1, h - 1), (w - 1, 0), (450, 240))),
          str([rows[y][x] for x, y in ((0, 0), (w - 1, h - 1), (w - 1, 0), (450, 240))]))
    check("bg=\"yellow\": no white pixel anywhere (a legend is filled with par(\"bg\") too, as R's)",
          all(p != (255, 255, 255) for r in rows for p in r), "")

    # par(par()) after par(mfcol=): both mfrow and mfcol given, mfrow wins as in R (whose par()
    # list has mfcol first: par("mfg") is 1 2 after the second plot), so it goes right of the first
    st, out, err = run('par(mfcol=[2, 2])\npar(par())\nplot(seq(1, 10), file="mfg.png")\n'
                       'plot(seq(1, 10), col="red", pch=15)\n', tmp, "t26.mls")
    w, h, rows = read_png(os.path.join(tmp, "mfg.png"))
    reds = pixels(rows, (255, 0, 0))
    check("par(par()): the panels fill by rows, as R's", len(reds) > 50 and all(x > w / 2 and y < h / 2 for x, y in reds),
          str((len(reds), reds[:3])))

    # op = par(...); plot(...); par(op): the next plot has R's default margins and background again
    st, out, err = run('op = par(mar=[2, 2, 1, 1], bg="blue")\nplot(seq(1, 10), file="op1.png")\npar(op)\n'
                       'plot(seq(1, 10), file="op2.png")\n', tmp, "t23.mls")
    w, h, rows = read_png(os.path.join(tmp, "op1.png"))
    check("op = par(bg=\"blue\"): the corner is blue", rows[0][0] == (0, 0, 255), str(rows[0][0]))
    w, h, rows = read_png(os.path.join(tmp, "op2.png"))
    box_where(rows, (59.04, 609.76, 406.56, 59.04), "par(op): R's default margins again")
    check("par(op): the corner is white again", rows[0][0] == (255, 255, 255), str(rows[0][0]))

    # las=1: the y tick labels are horizontal. The dark pixels left of the box (no y label) span
    # about one glyph's height across with las=0 and a whole "10000" with las=1, which ends where
    # R's does: png(type="cairo"); par(las=1); plot(1:10 * 1000, ylab="") has its labels' dark
    # pixels in columns 11 to 43 (33 to 41 with las=0; R's font is another)
    spans = []
    for las in (0, 1):
        st, out, err = run('par(las=%d)\nplot(seq(1, 10) * 1000, ylab="", file="las%d.png")\n' % (las, las), tmp, "t24.mls")
        w, h, rows = read_png(os.path.join(tmp, "las%d.png" % las))
        xs = [x for y in range(62, 404) for x in range(0, 51) if max(rows[y][x]) < 128]
        spans.append((min(xs), max(xs)) if xs else (0, -1))
    w0, w1 = spans[0][1] - spans[0][0] + 1, spans[1][1] - spans[1][0] + 1
    check("las=1: y labels horizontal (wider than 3 times the las=0 band), ending a line left of the box as R's",
          w0 > 0 and w1 > 3 * w0 and abs(spans[1][1] - 43) <= 2, str(spans))

    # log="x": 10 sits in the middle of 1..100 (log10 0..2 +- 4%)
    st, out, err = run('plot([1, 100], [1, 1], log="x", type="n", file="lg.png")\npoints(10, 1, pch=15, col="red")\n', tmp, "t11.mls")
    w, h, rows = read_png(os.path.join(tmp, "lg.png"))
    reg = region(w, h)
    reds = pixels(rows, (255, 0, 0), (reg[0], reg[1], reg[2], reg[3]))
    cxr = sum(x for x, _ in reds) / max(1, len(reds))
    check("log=\"x\": 10 lands in the middle of 1..100", reds and abs(cxr - (reg[0] + reg[1] + 1) / 2) <= 1.5, str(cxr))

    # text(): the label's pixels around its point; cex=2 doubles the symbol's size
    st, out, err = run('plot([0, 10], [0, 10], type="n", file="tx.png")\ntext(5, 5, "MLS", col="red")\n'
                       'points(2, 2, pch=15, col="blue")\npoints(8, 8, pch=15, col="blue", cex=2)\n', tmp, "t12.mls")
    w, h, rows = read_png(os.path.join(tmp, "tx.png"))
    reg = region(w, h)
    reds = pixels(rows, (255, 0, 0), (reg[0], reg[1], reg[2], reg[3]))
    tx, ty = xpix(5, (-0.4, 10.4), reg), ypix(5, (-0.4, 10.4), reg)
    check("text: the label is centred at its point", reds and abs(sum(x for x, _ in reds) / len(reds) - tx) < 4
          and abs(sum(y for _, y in reds) / len(reds) - ty) < 4, str((len(reds), tx, ty)))
    blues = pixels(rows, (0, 0, 255), (reg[0], reg[1], reg[2], reg[3]))
    small = [p for p in blues if p[0] < tx]
    big = [p for p in blues if p[0] > tx]
    check("cex=2: four times the area", small and abs(len(big) / len(small) - 4) < 0.8, str((len(small), len(big))))

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
