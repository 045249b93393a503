#!/usr/bin/python3
# check.py — checks the editor files under editors/ against the lexer (make editors-test).
#   tests/editors/check.py [ROOT]
# The keywords are read out of grammar/lexer.re (every rule whose pattern is a quoted word),
# never listed here. Checks: the VS Code TextMate grammar is valid JSON, every include
# resolves, every regex compiles, and a small TextMate-style matcher (earliest match, then
# the first rule) gives each keyword a keyword.* or constant.* scope, as it gives comments,
# strings, numbers and definitions theirs; package.json names the grammar and both
# extensions; Vim's syntax file has each keyword in a `syn keyword` line and its ftdetect
# file claims *.mls and *.dml, and when vim is installed, vim itself loads the files and
# highlights each keyword; the Emacs mode names each keyword in a string and its
# parentheses balance (outside strings, comments and character literals), and when emacs
# is installed, it byte-compiles the mode. Prints "ok"/"FAIL" lines and "N passed, N failed".
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def path(*p):
    return os.path.join(ROOT, *p)


def lexer_keywords():
    """The words of the lexer's rules ("if" { ... }), then the words lex_token_name() spells
    that no rule makes (the contextual 'as' of source(...) as ns)."""
    text = open(path("grammar", "lexer.re")).read()
    kw = re.findall(r'^\s*"([A-Za-z_][A-Za-z0-9_.]*)"\s*\{', text, re.M)
    for w in re.findall(r'return "\'([A-Za-z_][A-Za-z0-9_.]*)\'";', text):
        if w not in kw:
            kw.append(w)
    return kw


KW = lexer_keywords()
check("lexer.re gives the keywords (%s)" % " ".join(KW),
      len(KW) >= 10 and "if" in KW and "function" in KW and "TRUE" in KW and "as" in KW)

# ---- VS Code / TextMate ----
try:
    G = json.load(open(path("editors", "vscode", "syntaxes", "mls.tmLanguage.json")))
    check("TextMate grammar is valid JSON", True)
except (OSError, ValueError) as e:
    G = None
    check("TextMate grammar is valid JSON", False, str(e))


def rules(entry, repo, seen):
    """The match/begin rules of a grammar entry, includes expanded, in order."""
    if "include" in entry:
        ref = entry["include"]
        if not ref.startswith("#") or ref[1:] not in repo:
            raise KeyError("unresolved include " + ref)
        if ref in seen:
            return []
        return rules(repo[ref[1:]], repo, seen | {ref})
    out = []
    if "match" in entry or "begin" in entry:
        out.append(entry)
    for sub in entry.get("patterns", []) if "begin" not in entry else []:
        out.extend(rules(sub, repo, seen))
    return out


def scope_at(rs, text, before=""):
    """The scope a TextMate engine gives the token at the start of text (after the line's
    text before, which lookbehinds may see), and its length."""
    line, at = before + text, len(before)
    best = None
    for i, r in enumerate(rs):
        m = re.compile(r.get("match", r.get("begin"))).search(line, at)
        if m and (best is None or m.start() < best[0].start()):
            best = (m, r)
    if best is None:
        return None, 0
    m, r = best
    name = r.get("name")
    for g, cap in r.get("captures", {}).items():   # the capture that starts the token
        if m.group(int(g)) is not None and m.start(int(g)) == at:
            return cap.get("name", name), m.end(int(g)) - at
    if m.start() != at:
        return None, 0
    return name, m.end() - at


if G is not None:
    repo = G.get("repository", {})
    check("grammar has scopeName source.mls and patterns",
          G.get("scopeName") == "source.mls" and isinstance(G.get("patterns"), list))
    try:
        top = [r for p in G["patterns"] for r in rules(p, repo, frozenset())]
        allr = [r for k in repo for r in rules({"include": "#" + k}, repo, frozenset())]
        check("every include resolves", True)
    except KeyError as e:
        top, allr = [], []
        check("every include resolves", False, str(e))
    bad = []
    for r in allr:
        for key in ("match", "begin", "end"):
            if key in r:
                try:
                    re.compile(r[key])
                except re.error as e:
                    bad.append("%s: %s" % (r[key], e))
    check("every regex compiles", not bad and bool(allr), "; ".join(bad))
    for kw in KW:
        # 'as' is a keyword only after source(...): it is looked for there
        pre = 'source("f.mls") ' if kw == "as" else ""
        text = pre + kw + " ns" if kw == "as" else kw
        name, n = scope_at(top, text[len(pre):], text[:len(pre)])
        check("TextMate: keyword '%s' gets a keyword or constant scope (got %s)" % (kw, name),
              n == len(kw) and name is not None and
              (name.startswith("keyword.") or name.startswith("constant.")))
    samples = [("# a comment", "comment."), ("/* a\nblock */", "comment.block"),
               ("#' doc", "comment.line.documentation"), ('"str\\n"', "string.quoted.double"),
               ("'str'", "string.quoted.single"), ("1.5e-3", "constant.numeric"),
               ("f = function(x)", "entity.name.function"), ("$X", "variable.parameter"),
               ("%*% B", "keyword.operator"), ("nn::relu", "entity.name.namespace"),
               ("matrix[double] X", "storage.type")]
    for text, want in samples:
        name, _ = scope_at(top, text)
        check("TextMate: %r is %s* (got %s)" % (text, want, name),
              name is not None and name.startswith(want))
    name, _ = scope_at(top, "matrix(0, rows = 2)")
    check("TextMate: matrix( is a call, not a type (got %s)" % name,
          name is None or not name.startswith("storage.type"))

try:
    P = json.load(open(path("editors", "vscode", "package.json")))
    langs = P["contributes"]["languages"]
    gram = P["contributes"]["grammars"]
    exts = [e for l in langs for e in l.get("extensions", [])]
    check("package.json: .mls and .dml are the mls language", ".mls" in exts and ".dml" in exts)
    ok = all(os.path.exists(path("editors", "vscode", g["path"])) for g in gram) and \
        any(G and g.get("scopeName") == G.get("scopeName") for g in gram)
    check("package.json: the grammar's path and scopeName", ok)
    conf = [l["configuration"] for l in langs if "configuration" in l]
    json.load(open(path("editors", "vscode", conf[0])))
    check("language-configuration.json is valid JSON", True)
except (OSError, ValueError, KeyError, IndexError) as e:
    check("package.json and language-configuration.json", False, repr(e))

# ---- Vim ----
syn = open(path("editors", "vim", "syntax", "mls.vim")).read()
words = set()
for line in syn.splitlines():
    t = line.split()
    if len(t) > 3 and t[0] in ("syn", "syntax") and t[1] == "keyword":
        words.update(w for w in t[3:] if w != "contained")
    if len(t) > 3 and t[0] in ("syn", "syntax") and t[1] == "match":   # \<as\> in a pattern
        words.update(re.findall(r"\\<([A-Za-z_][A-Za-z0-9_.]*)\\>", line))
miss = [k for k in KW if k not in words]
check("vim: every keyword is in a syn keyword line (or a syn match)", not miss, "missing " + " ".join(miss))
ftd = open(path("editors", "vim", "ftdetect", "mls.vim")).read()
check("vim: ftdetect claims *.mls and *.dml", "*.mls" in ftd and "*.dml" in ftd)
vim = shutil.which("vim")
if vim:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.dml")
        with open(src, "w") as f:
            # each keyword alone on a line; the contextual 'as' after source(...)'s ')'
            f.write("\n".join(k if k != "as" else ") as ns" for k in KW) + "\n# comment\n\"str\"\n")
        out = os.path.join(d, "out")
        cmd = [vim, "-Nu", "NONE", "-i", "NONE", "-Es",
               "-c", "set rtp^=" + os.path.abspath(path("editors", "vim")),
               "-c", "filetype plugin on", "-c", "syntax on", "-c", "edit " + src,
               "-c", "redir! > " + out,
               "-c", "for l in range(1, line('$')) | echo getline(l) . ' ' . "
                     "synIDattr(synIDtrans(synID(l, getline(l) =~ '^) ' ? 3 : 1, 1)), 'name') | endfor",
               "-c", "echo 'filetype ' . &filetype", "-c", "echo 'errmsg ' . v:errmsg",
               "-c", "redir END", "-c", "qa!"]
        subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        got = dict(l.rsplit(" ", 1) for l in open(out).read().split("\n") if " " in l)
        check("vim: a .dml file gets filetype mls (got %s)" % got.get("filetype"),
              got.get("filetype") == "mls")
        check("vim: loading the files gives no error (%s)" % got.get("errmsg", ""),
              got.get("errmsg", "").strip() == "")
        groups = ("Conditional", "Repeat", "Statement", "Keyword", "Boolean", "Constant")
        for kw in KW:
            g = got.get(kw if kw != "as" else ") as ns")
            check("vim: '%s' is highlighted (%s)" % (kw, g), g in groups)
        check("vim: comments and strings", got.get("# comment") == "Comment" and got.get('"str"') in ("String", "Constant"))
else:
    print("note: vim is not installed; its load and highlight check did not run")

# ---- Emacs ----
el = open(path("editors", "emacs", "mls-mode.el")).read()
code = re.sub(r'^\s*;.*$', "", el, flags=re.M)        # the strings of code, not of comments
strings = set(re.findall(r'"((?:[^"\\]|\\.)*)"', code))
miss = [k for k in KW if k not in strings]
check("emacs: every keyword is a string in mls-mode.el", not miss, "missing " + " ".join(miss))


def balanced(src):
    depth, i, n, line = 0, 0, len(src), 1
    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
        if c == ";":
            while i < n and src[i] != "\n":
                i += 1
            continue
        if c == '"':
            i += 1
            while i < n and src[i] != '"':
                if src[i] == "\\":
                    i += 1
                elif src[i] == "\n":
                    line += 1
                i += 1
            if i >= n:
                return "unterminated string"
        elif c == "?":                          # a character literal: ?a ?\( ?\"
            i += 2 if i + 1 < n and src[i + 1] == "\\" else 1
        elif c == "\\":                         # an escaped character in a symbol
            i += 1
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth < 0:
                return "unmatched close at line %d" % line
        i += 1
    return None if depth == 0 else "%d unclosed at the end" % depth


err = balanced(el)
check("emacs: the parentheses of mls-mode.el balance", err is None, err or "")
check("emacs: mode defined, provided, .mls and .dml in auto-mode-alist",
      "(define-derived-mode mls-mode" in el and "(provide 'mls-mode)" in el and
      "mls\\\\|dml" in el)
emacs = shutil.which("emacs")
if emacs:
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(path("editors", "emacs", "mls-mode.el"), d)
        r = subprocess.run([emacs, "-Q", "--batch", "--eval", "(setq byte-compile-error-on-warn t)",
                            "-f", "batch-byte-compile", os.path.join(d, "mls-mode.el")],
                           capture_output=True, text=True, timeout=120)
        check("emacs: mls-mode.el byte-compiles without warnings", r.returncode == 0, r.stderr)
else:
    print("note: emacs is not installed; the byte-compile check did not run")

print("editors: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
