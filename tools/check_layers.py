#!/usr/bin/env python3
"""check_layers.py — the layering of src/ (docs/architecture.md), checked over #include lines;
make test runs it (make layers-check). Each rule names a set of files and the MLS headers
they may include; system headers (<...>) are always allowed. Exit 1 naming every violation.

Rules enforced:
  1. The op table is a leaf: src/ops/table.h includes only ops/ops.def.
  2. The core leaves stay leaves: mls.h, mem.h and tensor.h include nothing of MLS but mls.h.
  3. The backends (src/backend/, the CUDA plugin) include only their own headers, the op
     table, and the core leaves (tensor.h, mem.h, mls.h): never the interpreter, values,
     autodiff, staging or builtins.
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
SRC = os.path.join(ROOT, 'src')
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

def includes(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return INC.findall(f.read())

def resolve(frm, name):
    """The include as a path relative to src/ (the file's own directory first, then -Isrc)."""
    own = os.path.normpath(os.path.join(os.path.dirname(frm), name))
    if os.path.exists(own):
        return os.path.relpath(own, SRC)
    return os.path.normpath(name)

LEAVES = {'mls.h', 'mem.h', 'tensor.h'}

def allowed(rel, inc):
    """None when rel may include inc, else the rule it breaks."""
    if inc.endswith('.inc'):                      # generated text (build/gen)
        return None
    if rel == 'ops/table.h':
        return None if inc == 'ops/ops.def' else 'the op table (ops/table.h) is a leaf header'
    if rel in LEAVES:
        return None if inc == 'mls.h' else '%s is a core leaf header: it includes only mls.h' % rel
    if rel.startswith('backend/'):
        if inc.startswith('backend/') or inc in ('ops/table.h', 'ops/ops.def') or inc in LEAVES:
            return None
        return 'a backend includes only backend/ headers, the op table and the core leaves'
    return None

def main():
    bad = 0
    files = 0
    for dirpath, _, names in os.walk(SRC):
        for n in sorted(names):
            if not n.endswith(('.c', '.h', '.cu', '.def')):
                continue
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, SRC)
            files += 1
            for name in includes(path):
                inc = resolve(path, name)
                why = allowed(rel, inc)
                if why:
                    print('src/%s includes "%s": %s' % (rel, name, why))
                    bad += 1
    if bad:
        print('check_layers: %d include%s break the layering (docs/architecture.md)' % (bad, '' if bad == 1 else 's'))
        return 1
    print('check_layers: %d files of src/ keep the layering' % files)
    return 0

sys.exit(main())
