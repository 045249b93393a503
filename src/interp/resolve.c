/*
** resolve.c — binds each name to where it lives, once, after parsing: a local slot of the
** enclosing function (params, results, then every name assigned in its body, as in R), a
** slot of an outer function (closures), or the global binding carried by the symbol.
** Also rejects break/next outside a loop.
*/
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include "interp/interp.h"
#include "mem.h"

typedef struct Scope { FuncInfo *fi; struct Scope *outer; int loops; } Scope;

typedef struct Resolver {
  Chunk *ch;
  bool dml_module;         /* a .dml file sourced as a namespace: calls skip the caller's globals */
  char *err;
  size_t errn;
  Span *errspan;
  bool failed;
  /* growing slot list while collecting a function's locals */
  Symbol **names;
  int n, cap;
} Resolver;

static void fail(Resolver *R, Span sp, const char *msg) {
  if (R->failed) return;
  R->failed = true;
  snprintf(R->err, R->errn, "%s", msg);
  *R->errspan = sp;
}

static void add_local(Resolver *R, Symbol *s) {
  for (int i = 0; i < R->n; i++)
    if (R->names[i] == s) return;
  if (R->n == R->cap) {                        /* arena memory: the old array is left behind */
    R->cap = R->cap ? R->cap * 2 : 16;
    Symbol **nn = arena_alloc(&R->ch->arena, (size_t)R->cap * sizeof(Symbol *));
    if (R->n) memcpy(nn, R->names, (size_t)R->n * sizeof(Symbol *));
    R->names = nn;
  }
  R->names[R->n++] = s;
}

static void collect(Resolver *R, AstNode *n) {
  if (!n) return;
  switch (n->kind) {
  case AST_FUNCTION: return;                        /* its own scope */
  case AST_ASSIGN: {
    AstNode *t = n->kids[0];
    while (t->kind == AST_INDEX || t->kind == AST_MEMBER) t = t->kids[0];
    if (t->kind == AST_NAME) add_local(R, t->u.sym);
    break;
  }
  case AST_MASSIGN:
    for (uint32_t i = 0; i + 1 < n->nkids; i++) add_local(R, n->kids[i]->u.sym);
    break;
  case AST_FOR: add_local(R, n->kids[0]->u.sym); break;
  case AST_SOURCE_AS: add_local(R, n->kids[1]->u.sym); break;   /* "ns::": the namespace is local */
  default: break;
  }
  for (uint32_t i = 0; i < n->nkids; i++) collect(R, n->kids[i]);
}

static void setup_function(Resolver *R, FuncInfo *fi) {
  Symbol **saved = R->names;
  int sn = R->n, sc = R->cap;
  R->names = NULL;
  R->n = R->cap = 0;
  for (int i = 0; i < fi->nparams; i++) add_local(R, fi->params[i].name);
  for (int i = 0; i < fi->nrets; i++) add_local(R, fi->rets[i].name);
  collect(R, fi->body);
  fi->slots = R->names;
  fi->nslots = R->n;
  R->names = saved;
  R->n = sn;
  R->cap = sc;
}

static void walk(Resolver *R, AstNode *n, Scope *sc);
static void walk_kind(Resolver *R, AstNode *n, Scope *sc);

static void resolve_name(AstNode *n, Scope *sc) {
  int depth = 0;
  for (Scope *s = sc; s; s = s->outer, depth++) {
    if (!s->fi) break;                              /* the global scope */
    for (int i = 0; i < s->fi->nslots; i++)
      if (s->fi->slots[i] == n->u.sym) { n->slot = i; n->depth = depth; return; }
  }
  n->slot = -1;
  n->depth = 0;
}

static void walk(Resolver *R, AstNode *n, Scope *sc) {
  if (!n || R->failed) return;
  walk_kind(R, n, sc);
  if (R->dml_module && n->kind == AST_CALL && n->kids[0]->kind == AST_NAME && n->kids[0]->slot < 0)
    n->kids[0]->flags |= AST_F_OWNFN;
  eval_prepare(n, &R->ch->arena);
}

static void walk_kind(Resolver *R, AstNode *n, Scope *sc) {
  switch (n->kind) {
  case AST_NAME: resolve_name(n, sc); return;
  case AST_FUNCTION: {
    FuncInfo *fi = n->u.fn;
    fi->outer = sc ? sc->fi : NULL;
    setup_function(R, fi);
    Scope inner = { fi, sc, 0 };
    for (int i = 0; i < fi->nparams; i++) walk(R, fi->params[i].dflt, &inner);
    walk(R, fi->body, &inner);
    return;
  }
  case AST_WHILE: case AST_FOR: {
    Scope s = *sc;
    s.loops++;
    for (uint32_t i = 0; i < n->nkids; i++) walk(R, n->kids[i], i + 1 == n->nkids ? &s : sc);
    return;
  }
  case AST_RETURN:
    if (!sc->fi) { fail(R, n->span, "'return' outside a function"); return; }
    for (uint32_t i = 0; i < n->nkids; i++) walk(R, n->kids[i], sc);
    return;
  case AST_BREAK: case AST_NEXT:
    if (sc->loops == 0) fail(R, n->span, n->kind == AST_BREAK ? "'break' outside a loop" : "'next' outside a loop");
    return;
  default:
    for (uint32_t i = 0; i < n->nkids; i++) walk(R, n->kids[i], sc);
  }
}

/* A failed allocation while resolving (the arena grows) ends the walk through here. */
typedef struct ResolveOom { jmp_buf jb; size_t n; } ResolveOom;

static void resolve_oom(void *ud, size_t n) {
  ResolveOom *o = ud;
  o->n = n;
  longjmp(o->jb, 1);
}

static void resolve_walk(Interp *I, Chunk *ch, bool module, char *err, size_t errn, Span *errspan, bool *ok)
  __attribute__((noinline));

/* The chunk is the caller's either way; an out-of-memory is reported as an error at its start. */
bool resolve_chunk(Interp *I, Chunk *ch, bool module, char *err, size_t errn, Span *errspan, bool *oom) {
  ResolveOom o;
  bool ok = false;
  if (oom) *oom = false;
  MemOomHook old = mem_set_oom_handler((MemOomHook){ resolve_oom, &o });
  if (setjmp(o.jb) == 0) {
    resolve_walk(I, ch, module, err, errn, errspan, &ok);
  } else {
    char size[32];
    snprintf(err, errn, "out of memory (allocating %s)", mem_format_size(size, sizeof size, o.n));
    *errspan = ch->root ? ch->root->span : (Span){ 0, 0 };
    if (oom) *oom = true;
    ok = false;
  }
  mem_set_oom_handler(old);
  return ok;
}

static void resolve_walk(Interp *I, Chunk *ch, bool module, char *err, size_t errn, Span *errspan, bool *ok) {
  (void)I;
  Resolver R;
  memset(&R, 0, sizeof R);
  R.ch = ch;
  R.err = err;
  R.errn = errn;
  R.errspan = errspan;
  Scope top = { NULL, NULL, 0 };
  if (module) {                 /* source() as ns: the file is the body of a function */
    R.dml_module = ch->dml;
    setup_function(&R, &ch->top);
    top.fi = &ch->top;
  }
  walk(&R, ch->root, &top);
  *ok = !R.failed;
}
