#!/usr/bin/env python3
"""check_layers.py — the layering of src/ (docs/architecture.md), checked over #include lines;
make test runs it (make layers-check). Each rule names a set of files and the MLS headers
they may include; system headers (<...>) are always allowed. Exit 1 naming every violation.

Rules enforced:
  1. The op table is a leaf: src/ops/table.h includes only ops/ops.def.
  2. The core leaves stay leaves: mls.h, mem.h, tensor.h and plugin.h include nothing of MLS but mls.h.
  3. The backends (src/backend/, the CUDA plugin) include only their own headers, the op
     table, and the core leaves (tensor.h, mem.h, mls.h): never the interpreter, values,
     autodiff, staging or builtins.
  4. The op families (src/ops/) include nothing of the evaluator (src/interp/) nor the
     builtins (builtins.h), directly or through the headers they include: they see the
     interpreter's state (state.h), values, tensors, the backends and the traces (autodiff.h).
  5. Over the objects' symbols (nm, where the build directory has them): the op families call
     no builtin (bi_*), nothing of the evaluator (what src/interp/eval.o defines) and nothing
     of MPI (mpi_*): a builtin calls ops, never the other way (allreduce reaches MPI through
     I->comm_allreduce). Autodiff and staging call nothing eval.o defines either: they call
     functions through interp/call.c, never the tree walker.
"""
import os, re, subprocess, sys

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

LEAVES = {'mls.h', 'mem.h', 'tensor.h', 'plugin.h'}

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

def closure(rel, seen=None):
    """Every MLS header rel includes, directly or through the headers it includes."""
    seen = set() if seen is None else seen
    path = os.path.join(SRC, rel)
    if not os.path.exists(path):
        return seen
    for name in includes(path):
        inc = resolve(path, name)
        if inc not in seen and not inc.endswith('.inc'):
            seen.add(inc)
            closure(inc, seen)
    return seen

def family_includes(rel):
    """Rule 4: the offending headers of an op family's file (empty when none)."""
    return sorted(inc for inc in closure(rel) if inc.startswith('interp/') or inc == 'builtins.h')

def nm(obj, flag):
    out = subprocess.run(['nm', flag, obj], capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}

def symbols(build):
    """Rule 5; returns (violations, objects checked)."""
    eval_o = os.path.join(build, 'src', 'interp', 'eval.o')
    if not os.path.exists(eval_o):
        return [], 0
    evaldefs = nm(eval_o, '--defined-only') - nm(eval_o, '-u')
    bad, n = [], 0
    for dirpath, _, names in os.walk(os.path.join(build, 'src')):
        for f in sorted(names):
            if not f.endswith('.o'):
                continue
            obj = os.path.join(dirpath, f)
            rel = os.path.relpath(obj, os.path.join(build, 'src'))
            fam = rel.startswith('ops/')
            if not (fam or rel.startswith('staging/') or rel in ('autodiff.o', 'autodiff_trace.o')):
                continue
            n += 1
            und = nm(obj, '-u')
            for sym in sorted(und & evaldefs):
                bad.append('src/%s calls %s of the evaluator (interp/eval.c)' % (rel[:-2] + '.c', sym))
            if fam:
                for sym in sorted(und):
                    if sym.startswith('bi_') or sym.startswith('mpi_'):
                        bad.append('src/%s calls %s: an op calls no builtin and no MPI function by name' % (rel[:-2] + '.c', sym))
    return bad, n

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
            if rel.startswith('ops/'):
                for inc in family_includes(rel):
                    print('src/%s includes "%s" (directly or through a header): an op family includes nothing '
                          'of the evaluator (interp/) or the builtins' % (rel, inc))
                    bad += 1
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build')
    symbad, objs = symbols(build)
    for line in symbad:
        print(line)
    bad += len(symbad)
    if bad:
        print('check_layers: %d break%s of the layering (docs/architecture.md)' % (bad, '' if bad == 1 else 's'))
        return 1
    print('check_layers: %d files of src/ keep the layering; %d objects of %s call down only' % (files, objs, build))
    return 0

sys.exit(main())
