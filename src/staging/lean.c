/*
** lean.c — the lean runner of a loop node's body (lean.h; docs/staging.md "The lean runner").
** A loop node's body runs once an iteration; through the graph runner each of its ops boxes a
** Value, counts references, goes through op_apply's dispatch and allocates its result. When
** every node of the body is an elementwise op, a product or a fusion group on numbers and dense
** matrices (no call, no index, no nested loop), the shapes the trace gave hold at every
** iteration of a run (the carried values keep theirs, the enclosing graph's values do not
** change during the run), so the body is compiled once into a flat list of steps, each a
** direct call of the kernel the graph runner would reach (the backend's elementwise entry,
** op_gemm_into, the backend's fusion-group runner) with the broadcast modes worked out at
** compile time, writing into a buffer per node kept across the iterations of the run. The
** kernels, their operands and their order are the graph runner's, so the bits are too.
**
** Buffers and aliasing: a node's buffer is written only while the runner holds the one
** reference to it (its Tensor and Storage counts both 1); a buffer a carried value took (the
** node is the carried value's new value) is shared until the carried value moves on, and then
** the carried value's old matrix, if nothing else holds it (a checkpoint, another carried value,
** the caller's variable before the loop), becomes the node's buffer: the double-buffering of
** x = f(x) without an allocation. Otherwise a fresh buffer is made, so a value anyone else holds
** is never overwritten.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/scalar.h"
#include "autodiff.h"
#include "err.h"
#include "mem.h"
#include "staging/lean.h"
#include "staging/loop.h"
#include "tensor.h"

/* The lean runner serves small bodies of small matrices, where the per-op overhead is the cost;
** larger ones run through the graph runner (whose kernels split work across the cores and poll
** the interrupt flag inside). */
enum { LEAN_MAX_NODES = 256 };
#define LEAN_MAX_NUMEL ((int64_t)1 << 16)

typedef enum LeanKind { LK_PARAM, LK_CONST, LK_EW2, LK_EW1, LK_MM, LK_FUSED } LeanKind;

typedef struct LeanStep {
  uint8_t kind;             /* LeanKind */
  bool mat;                 /* the result is a matrix (else a number) */
  bool ta, tb;              /* LK_MM, LK_FUSED with the GEMM epilogue: the transpose flags */
  uint16_t op;
  int32_t node;             /* the body's node it computes */
  int32_t a, b;             /* LK_EW2, LK_EW1, LK_MM: the input nodes; LK_PARAM: the leaf */
  BcastMode bc[2];          /* LK_EW2 with a matrix: the operands' broadcast modes */
  int64_t rows, cols;       /* a matrix result's shape */
} LeanStep;

struct LeanProg {
  int32_t nsteps, ncarry;
  LeanStep *steps;
  int32_t *out;             /* per carried value: the node of its new value */
};

/* ---- compiling ---- */
static bool lean_type(const GNode *nd) {
  if (nd->vt == VT_NUM) return true;
  return nd->vt == VT_MAT && nd->rows >= 1 && nd->cols >= 1 && nd->rows * nd->cols <= LEAN_MAX_NUMEL;
}

/* The broadcast modes and result shape of an elementwise binary op on shapes (r0, c0), (r1, c1),
** as ew_binary works them out; false: not conformable (the op would throw: not lean). */
static bool ew_modes(int64_t r0, int64_t c0, int64_t r1, int64_t c1, BcastMode bc[2], int64_t *rows, int64_t *cols) {
  if (r0 == r1 && c0 == c1) { *rows = r0; *cols = c0; bc[0] = bc[1] = BC_FULL; }
  else if (r1 == 1 && c1 == 1) { *rows = r0; *cols = c0; bc[0] = BC_FULL; bc[1] = BC_SCALAR; }
  else if (r0 == 1 && c0 == 1) { *rows = r1; *cols = c1; bc[0] = BC_SCALAR; bc[1] = BC_FULL; }
  else if (r1 == 1 && c1 == c0) { *rows = r0; *cols = c0; bc[0] = BC_FULL; bc[1] = BC_ROW; }
  else if (c1 == 1 && r1 == r0) { *rows = r0; *cols = c0; bc[0] = BC_FULL; bc[1] = BC_COL; }
  else if (r0 == 1 && c0 == c1) { *rows = r1; *cols = c1; bc[0] = BC_ROW; bc[1] = BC_FULL; }
  else if (c0 == 1 && r0 == r1) { *rows = r1; *cols = c1; bc[0] = BC_COL; bc[1] = BC_FULL; }
  else return false;
  return true;
}

static void dims(const GNode *nd, int64_t *r, int64_t *c) {
  *r = nd->vt == VT_MAT ? nd->rows : 1;
  *c = nd->vt == VT_MAT ? nd->cols : 1;
}

/* Does register k of fusion group p take node x as the group's kernel reads it (fused_fits)? */
static bool fused_reg_fits(const FusedProg *p, int k, const GNode *x) {
  if (x->vt == VT_NUM) return p->bc[k] == BC_SCALAR;
  switch (p->bc[k]) {
  case BC_FULL: return x->rows == p->rows && x->cols == p->cols;
  case BC_SCALAR: return x->rows == 1 && x->cols == 1;
  case BC_ROW: return x->rows == 1 && x->cols == p->cols;
  case BC_COL: return x->rows == p->rows && x->cols == 1;
  }
  return false;
}

/* One node as a step; false: not a node the lean runner runs. */
static bool compile_node(const Loop *lp, const Graph *g, int32_t i, LeanStep *st) {
  const GNode *nd = &g->nodes[i];
  memset(st, 0, sizeof *st);
  st->node = i;
  if (!lean_type(nd)) return false;
  st->mat = nd->vt == VT_MAT;
  st->rows = nd->rows;
  st->cols = nd->cols;
  switch ((GKind)nd->kind) {
  case GN_PARAM:
    if (nd->param == lp->ncarry && lp->is_while) return false;   /* (a while loop has no index) */
    st->kind = LK_PARAM;
    st->a = nd->param;
    return true;
  case GN_CONST:
    st->kind = LK_CONST;
    return nd->v.t == nd->vt;
  case GN_OP: {
    int flags = op_info[nd->op].flags;
    if (nd->nextra != 0 || nd->op == OP_RANGE) return false;
    st->op = nd->op;
    int64_t r0, c0, r1, c1;
    if ((flags & OPF_EW) && op_info[nd->op].arity == 2 && nd->nin == 2) {
      const GNode *x = &g->nodes[nd->in[0]], *y = &g->nodes[nd->in[1]];
      st->kind = LK_EW2;
      st->a = nd->in[0];
      st->b = nd->in[1];
      if (x->vt == VT_NUM && y->vt == VT_NUM) return !st->mat;   /* (a comparison's boolean: not lean) */
      dims(x, &r0, &c0);
      dims(y, &r1, &c1);
      int64_t rows, cols;
      return st->mat && ew_modes(r0, c0, r1, c1, st->bc, &rows, &cols) && rows == nd->rows && cols == nd->cols;
    }
    if ((flags & OPF_EW) && op_info[nd->op].arity == 1 && nd->nin == 1) {
      const GNode *x = &g->nodes[nd->in[0]];
      st->kind = LK_EW1;
      st->a = nd->in[0];
      if (x->vt == VT_NUM) return !st->mat;
      return st->mat && x->rows == nd->rows && x->cols == nd->cols;
    }
    if (nd->op == OP_MATMUL && nd->nin == 2) {
      const GNode *x = &g->nodes[nd->in[0]], *y = &g->nodes[nd->in[1]];
      st->kind = LK_MM;
      st->a = nd->in[0];
      st->b = nd->in[1];
      st->ta = (nd->flags & GF_TA) != 0;
      st->tb = (nd->flags & GF_TB) != 0;
      if (x->vt != VT_MAT || y->vt != VT_MAT || !st->mat) return false;   /* (a number: a 1x1 made per product) */
      int64_t m = st->ta ? x->cols : x->rows, k = st->ta ? x->rows : x->cols;
      int64_t k2 = st->tb ? y->cols : y->rows, n = st->tb ? y->rows : y->cols;
      return k == k2 && m == nd->rows && n == nd->cols;
    }
    return false;
  }
  case GN_FUSED: {
    const FusedProg *p = nd->fused;
    if (p->nins == 0 || !(p->red == OP_NONE || p->red == OP_SUM)) return false;
    if (p->red == OP_NONE ? !st->mat || p->rows != nd->rows || p->cols != nd->cols : st->mat) return false;
    if (p->rows < 1 || p->cols < 1 || p->rows * p->cols > LEAN_MAX_NUMEL) return false;
    st->kind = LK_FUSED;
    st->rows = p->rows;
    st->cols = p->cols;
    int off = 0;
    if (p->mm) {                               /* the product op(A) op(B) is register 0 */
      if (nd->nin != p->nin + 1) return false;
      const GNode *x = &g->nodes[nd->in[0]], *y = &g->nodes[nd->in[1]];
      st->ta = p->mm_ta;
      st->tb = p->mm_tb;
      if (x->vt != VT_MAT || y->vt != VT_MAT || p->bc[0] != BC_FULL) return false;
      int64_t m = st->ta ? x->cols : x->rows, k = st->ta ? x->rows : x->cols;
      int64_t k2 = st->tb ? y->cols : y->rows, n = st->tb ? y->rows : y->cols;
      if (k != k2 || m != p->rows || n != p->cols) return false;
      off = 1;
    } else if (nd->nin != p->nin) {
      return false;
    }
    for (int k = off; k < p->nin; k++) {
      const GNode *x = &g->nodes[nd->in[k + off]];
      if (!lean_type(x) || !fused_reg_fits(p, k, x)) return false;
    }
    return true;
  }
  case GN_CAPTURE: case GN_CALL: case GN_LOOP: case GN_ITEM: case GN_RLOOP: return false;
  }
  return false;
}

LeanProg *lean_compile(const Loop *lp) {
  const Graph *g = lp->body;
  int n = lp->ncarry;
  if (!g || g->n > LEAN_MAX_NODES || g->dynamic) return NULL;
  if (g->out.node != -2 || g->out.n != n) return NULL;
  for (int k = 0; k < n; k++) {
    int32_t o = g->out.kids[k].node;
    if (o < 0 || o >= g->n || (g->nodes[o].flags & GF_DEAD) || !lean_type(&g->nodes[o])) return NULL;
  }
  LeanProg *p = mem_calloc(1, sizeof *p);
  p->ncarry = n;
  p->steps = mem_calloc((size_t)(g->n > 0 ? g->n : 1), sizeof(LeanStep));
  p->out = mem_calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t));
  for (int k = 0; k < n; k++) p->out[k] = g->out.kids[k].node;
  for (int32_t i = 0; i < g->n; i++) {
    if (g->nodes[i].flags & GF_DEAD) continue;
    if (!compile_node(lp, g, i, &p->steps[p->nsteps])) { lean_free(p); return NULL; }
    p->nsteps++;
  }
  return p;
}

void lean_free(LeanProg *p) {
  if (!p) return;
  mem_free(p->steps);
  mem_free(p->out);
  mem_free(p);
}

/* ---- running ---- */
/* A matrix the kernels read as it is: dense, packed, in host memory of the CPU instance. */
static bool plain_mat(Interp *I, const Tensor *t) {
  return t->st->be == I->cpu && !t->st->dev && !t->st->sparse && !t->st->abstract && tensor_is_contiguous(t);
}

static bool fits_value(Interp *I, Value v, const LeanStep *st) {
  if (!st->mat) return v.t == VT_NUM;
  return v.t == VT_MAT && tensor_rows(v.u.m) == st->rows && tensor_cols(v.u.m) == st->cols && plain_mat(I, v.u.m);
}

bool lean_fits(Interp *I, const LeanProg *p, const Loop *lp, const Value *leaves) {
  if (I->nan_check || I->device != I->cpu || (I->stage && I->stage->active)) return false;
  const Graph *g = lp->body;
  if (!graph_guards_hold(I, g)) return false;    /* (the graph runner says why: stale) */
  for (int s = 0; s < p->nsteps; s++) {
    const LeanStep *st = &p->steps[s];
    if (st->kind == LK_PARAM && !(st->a == lp->ncarry) && !fits_value(I, leaves[st->a], st)) return false;
    if (st->kind == LK_CONST && !fits_value(I, g->nodes[st->node].v, st)) return false;
  }
  for (int k = 0; k < lp->ncarry; k++)           /* (a carried value the body does not read) */
    if (leaves[k].t == VT_BOX) return false;
  return true;
}

/* Node i's buffer, rows x cols, held by nothing but the runner (hold's item i): the one it has,
** or a fresh one when a carried value still holds that (out of memory: located at the node, as
** op_apply locates its op's). */
static Tensor *buffer(Interp *I, List *hold, int32_t i, int64_t rows, int64_t cols, Span sp) {
  Value *h = &hold->items[i];
  if (h->t == VT_MAT && h->u.m->refcount == 1 && h->u.m->st->refcount == 1) return h->u.m;
  Value d = *h;
  *h = val_null();
  val_release(d);
  Span saved = I->call_span;
  I->call_span = sp;
  Tensor *t = tensor_new_on(I, I->cpu, rows, cols);
  I->call_span = saved;
  *h = val_mat(t);
  return t;
}

bool lean_step(Interp *I, const LeanProg *p, const Loop *lp, Value *leaves, List *hold) {
  const Graph *g = lp->body;
  const Backend *be = I->cpu;
  Value v[LEAN_MAX_NODES];
  for (int s = 0; s < p->nsteps; s++) {
    const LeanStep *st = &p->steps[s];
    int32_t i = st->node;
    const GNode *nd = &g->nodes[i];
    switch ((LeanKind)st->kind) {
    case LK_PARAM: v[i] = leaves[st->a]; continue;
    case LK_CONST: v[i] = nd->v; continue;
    case LK_EW2: {
      Value a = v[st->a], b = v[st->b];
      if (!st->mat) { v[i] = val_num(sc_binary(st->op, a.u.n, b.u.n)); continue; }
      Tensor *o = buffer(I, hold, i, st->rows, st->cols, nd->span);
      OpParams pr;
      memset(&pr, 0, sizeof pr);
      pr.bc[0] = st->bc[0];
      pr.bc[1] = st->bc[1];
      Tensor *in[2] = { NULL, NULL };
      if (a.t == VT_MAT) in[0] = a.u.m; else pr.scalar[0] = a.u.n;
      if (b.t == VT_MAT) in[1] = b.u.m; else pr.scalar[1] = b.u.n;
      I->kernel_runs++;
      if (be->run(be, (OpKind)st->op, o, in, &pr) != 0) return false;
      o->logical = (op_info[st->op].flags & OPF_CMP) != 0;
      if (o->names) tensor_set_names(o, NULL);
      v[i] = val_mat(o);
      break;
    }
    case LK_EW1: {
      Value a = v[st->a];
      if (!st->mat) { v[i] = val_num(sc_unary(st->op, a.u.n)); continue; }
      Tensor *o = buffer(I, hold, i, st->rows, st->cols, nd->span);
      Tensor *in[1] = { a.u.m };
      I->kernel_runs++;
      if (be->run(be, (OpKind)st->op, o, in, NULL) != 0) return false;
      o->logical = (op_info[st->op].flags & OPF_CMP) != 0;
      if (o->names) tensor_set_names(o, NULL);
      v[i] = val_mat(o);
      break;
    }
    case LK_MM: {
      Tensor *o = buffer(I, hold, i, st->rows, st->cols, nd->span);
      const Backend *ran;
      I->kernel_runs++;
      if (op_gemm_into(I, st->ta, st->tb, v[st->a].u.m, v[st->b].u.m, o, &ran) != 0) return false;
      o->logical = false;
      if (o->names) tensor_set_names(o, NULL);
      v[i] = val_mat(o);
      break;
    }
    case LK_FUSED: {
      const FusedProg *fp = nd->fused;
      Tensor *in[64];
      double sc[64];
      int off = fp->mm ? 1 : 0;
      Tensor *o;
      if (st->mat) {
        o = buffer(I, hold, i, st->rows, st->cols, nd->span);
      } else {                                   /* a sum: its 1x1 scratch */
        o = buffer(I, hold, i, 1, 1, nd->span);
      }
      if (fp->mm) {                              /* the product into the result (a sum's: into the
                                                 ** node's second buffer), the program over it */
        Tensor *pm = st->mat ? o : buffer(I, hold, g->n + i, st->rows, st->cols, nd->span);
        const Backend *ran;
        I->kernel_runs++;
        if (op_gemm_into(I, st->ta, st->tb, v[nd->in[0]].u.m, v[nd->in[1]].u.m, pm, &ran) != 0) return false;
        if (I->interrupted) interp_check_interrupt(I, nd->span);
        in[0] = pm;
        sc[0] = 0;
      }
      for (int k = off; k < fp->nin; k++) {
        Value x = v[nd->in[k + off]];
        in[k] = x.t == VT_MAT ? x.u.m : NULL;
        sc[k] = x.t == VT_MAT ? 0 : x.u.n;
      }
      I->kernel_runs++;
      if (be->run_fused(be, fp, o, in, sc) != 0) return false;
      o->logical = false;
      if (o->names) tensor_set_names(o, NULL);
      v[i] = st->mat ? val_mat(o) : val_num(tensor_data(o)[0]);
      break;
    }
    }
    if (I->interrupted) interp_check_interrupt(I, nd->span);   /* (a kernel may stop early: before the leaves change) */
  }
  /* the carried values' new values; a buffer the old ones free goes back to its node */
  int n = p->ncarry;
  Value nv[LOOP_MAX_CARRY];
  for (int k = 0; k < n; k++) {
    nv[k] = v[p->out[k]];
    val_retain(nv[k]);
  }
  for (int k = 0; k < n; k++) {
    Value old = leaves[k];
    leaves[k] = nv[k];
    int32_t o = p->out[k];
    Value *h = &hold->items[o];
    if (old.t == VT_MAT && nv[k].t == VT_MAT && h->t == VT_MAT && h->u.m == nv[k].u.m && old.u.m->refcount == 1 &&
        old.u.m->st->refcount == 1 && tensor_rows(old.u.m) == tensor_rows(h->u.m) && tensor_cols(old.u.m) == tensor_cols(h->u.m) &&
        plain_mat(I, old.u.m)) {
      tensor_free_ref(h->u.m);                   /* (the carried value holds it now) */
      *h = old;                                  /* (the old value's reference: the node's buffer) */
      continue;
    }
    val_release(old);
  }
  return true;
}
