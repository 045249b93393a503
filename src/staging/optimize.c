/*
** optimize.c — the staged graph's optimizer (LANGUAGE.md §12), each pass logged for explain:
** constant folding, algebraic rewrites that keep results, common-subexpression elimination,
** dead-code elimination, elementwise fusion and the memory plan (values freed at last use).
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "err.h"
#include "mem.h"
#include "ops.h"
#include "staging/graph.h"
#include "tensor.h"

#define LIVE(nd) (!((nd)->flags & GF_DEAD))

static void where(const GNode *nd, char *buf, size_t n) {
  buf[0] = '\0';
  if (nd->src && nd->span.end > 0) {
    uint32_t line, col;
    diag_locate(nd->src, nd->span.start, &line, &col);
    snprintf(buf, n, " at %u:%u", line, col);
  }
}

void graph_count_uses(Graph *g) {
  for (int i = 0; i < g->n; i++) g->nodes[i].uses = 0;
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (!LIVE(nd)) continue;
    for (int k = 0; k < nd->nin; k++) g->nodes[nd->in[k]].uses++;
  }
  for (int i = 0; i < g->nout; i++) g->nodes[g->outs[i]].uses++;
}

int32_t graph_live_count(const Graph *g) {
  int32_t c = 0;
  for (int i = 0; i < g->n; i++) c += LIVE(&g->nodes[i]);
  return c;
}

/* Scratch memory of a pass, freed by a throw (an allocation failing half way) until the pass
** frees it itself; frees go newest first. */
/* Ctrl-C while a graph is optimized (a jit of a long unrolled loop can take minutes): the
** passes poll between nodes, where a throw leaves nothing behind (their scratch is deferred,
** the graph is its owner's), and the jit's call raises it. */
static void opt_poll(Interp *I) {
  if (I->interrupted) interp_check_interrupt(I, I->call_span);
}

static void *scratch_new(Interp *I, size_t n) {
  void *p = mem_alloc(n);
  mls_defer(I, mem_free, p);
  return p;
}

static void scratch_free(Interp *I, void *p) {
  mls_undefer(I, p);
  mem_free(p);
}

static size_t node_bytes(const GNode *nd) {
  return nd->vt == VT_MAT ? (size_t)(nd->rows * nd->cols) * sizeof(double) : 0;
}

/* The most bytes of intermediate values alive at once when values die at their last use. */
size_t graph_peak_bytes(const Graph *g) {
  int32_t *rem = mem_alloc((size_t)(g->n > 0 ? g->n : 1) * sizeof(int32_t));
  for (int i = 0; i < g->n; i++) rem[i] = g->nodes[i].uses;
  size_t cur = 0, peak = 0;
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (!LIVE(nd)) continue;
    bool inter = nd->kind == GN_OP || nd->kind == GN_CALL || nd->kind == GN_FUSED;
    if (inter) cur += node_bytes(nd);
    if (cur > peak) peak = cur;
    for (int k = 0; k < nd->nin; k++) {
      const GNode *p = &g->nodes[nd->in[k]];
      if (--rem[nd->in[k]] == 0 && (p->kind == GN_OP || p->kind == GN_CALL || p->kind == GN_FUSED)) cur -= node_bytes(p);
    }
  }
  mem_free(rem);
  return peak;
}

/* ---- editing ---- */

/* ---- forwarding: replacing a node's uses in time linear in the graph ----
** A pass that replaces node `from` by `to` records fwd[from] = to instead of scanning the
** graph for from's uses (a scan per replacement made compiling a long unrolled loop quadratic:
** CSE merged thousands of equal constants). Nodes come in topological order, so a pass that
** resolves each node's inputs (fwd_inputs) before it looks at them sees every earlier
** replacement; fwd_apply rewrites the inputs, outputs and result description once at its end. */
typedef struct Fwd { int32_t *to; int32_t cap; } Fwd;

static void fwd_init(Interp *I, Fwd *f, int32_t n) {
  f->cap = n + n / 2 + 16;
  f->to = scratch_new(I, (size_t)f->cap * sizeof(int32_t));
  for (int32_t i = 0; i < f->cap; i++) f->to[i] = i;
}

/* Room for node index i (a pass that adds nodes grows the graph past the first size). */
static void fwd_room(Interp *I, Fwd *f, int32_t i) {
  if (i < f->cap) return;
  int32_t cap = (i + 1) * 2;
  int32_t *to = scratch_new(I, (size_t)cap * sizeof(int32_t));
  memcpy(to, f->to, (size_t)f->cap * sizeof(int32_t));
  for (int32_t k = f->cap; k < cap; k++) to[k] = k;
  scratch_free(I, f->to);
  f->to = to;
  f->cap = cap;
}

static int32_t fwd_get(Fwd *f, int32_t x) {
  if (x < 0 || x >= f->cap) return x;
  int32_t r = x;
  while (f->to[r] != r) r = f->to[r];
  while (f->to[x] != r) { int32_t n = f->to[x]; f->to[x] = r; x = n; }   /* path compression */
  return r;
}

static void fwd_inputs(Fwd *f, GNode *nd) {
  for (int k = 0; k < nd->nin; k++) nd->in[k] = fwd_get(f, nd->in[k]);
}

static void fwd_gout(Fwd *f, GOut *o) {
  if (o->node >= 0) o->node = fwd_get(f, o->node);
  for (int i = 0; i < o->n && o->kids; i++) fwd_gout(f, &o->kids[i]);
}

static void fwd_apply(Interp *I, Graph *g, Fwd *f) {
  for (int i = 0; i < g->n; i++) fwd_inputs(f, &g->nodes[i]);
  for (int i = 0; i < g->nout; i++) g->outs[i] = fwd_get(f, g->outs[i]);
  fwd_gout(f, &g->out);
  scratch_free(I, f->to);
}

/* Every use of node from now uses node to (resolved when the pass ends). */
static void replace_uses(Interp *I, Fwd *f, int32_t from, int32_t to) {
  fwd_room(I, f, from);
  f->to[from] = fwd_get(f, to);
}

static void set_op(GNode *nd, OpKind op, int nin, const int32_t *in) {
  int32_t *ins = mem_alloc((size_t)(nin > 0 ? nin : 1) * sizeof(int32_t));   /* nd unchanged if it fails */
  memcpy(ins, in, (size_t)nin * sizeof(int32_t));
  mem_free(nd->in);
  nd->kind = GN_OP;
  nd->op = (uint16_t)op;
  nd->nin = nin;
  nd->nextra = 0;
  nd->in = ins;
}

/* A new op node (appended: the final topological sort puts it before its users). */
static int32_t add_op(Graph *g, OpKind op, int nin, const int32_t *in, const GNode *like, uint8_t vt, int64_t r, int64_t c) {
  int32_t chain = like->chain;
  int32_t id = graph_add(g, GN_OP, like->span, like->src);
  GNode *nd = &g->nodes[id];
  nd->chain = chain;
  set_op(nd, op, nin, in);
  nd->vt = vt;
  nd->rows = r;
  nd->cols = c;
  return id;
}

static int32_t add_num(Graph *g, double x) {
  int32_t id = graph_add(g, GN_CONST, (Span){ 0, 0 }, NULL);
  g->nodes[id].v = val_num(x);
  g->nodes[id].vt = VT_NUM;
  return id;
}

static bool is_op(const Graph *g, int32_t i, OpKind op) {
  const GNode *nd = &g->nodes[i];
  return LIVE(nd) && nd->kind == GN_OP && nd->op == op && !(nd->flags & (GF_TA | GF_TB));
}

static bool is_num(const Graph *g, int32_t i, double x) {
  const GNode *nd = &g->nodes[i];
  if (nd->kind != GN_CONST) return false;
  Value v = nd->v;
  if (v.t == VT_NUM) return v.u.n == x;
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) return tensor_data(v.u.m)[0] == x;
  return false;
}

static void drop_node(Graph *g, int32_t i) {
  GNode *nd = &g->nodes[i];
  nd->flags |= GF_DEAD;
}

/* ---- passes ---- */
typedef struct FoldJob { OpKind op; Value *in; int nextra; Span sp; Value r; } FoldJob;
static void fold_run(Interp *I, void *ud) {
  FoldJob *j = ud;
  int nin = op_info[j->op].arity;
  j->r = op_apply(I, j->op, nin, j->in, j->nextra, j->in + nin, j->sp);
}

static void fold_constants(Interp *I, Graph *g) {
  int folded = 0;
  for (int i = 0; i < g->n; i++) {
    GNode *nd = &g->nodes[i];
    if (!LIVE(nd) || nd->kind != GN_OP || (nd->flags & (GF_TA | GF_TB)) || nd->nin > 8) continue;
    if (nd->op == OP_INDEX || nd->op == OP_SCATTER) continue;
    if (nd->op == OP_ALLREDUCE) continue;     /* a collective: every run takes part (src/mpi/) */
    if (nd->op == OP_MASKED || nd->op == OP_MMCHAIN) continue;   /* (their programs in v: graph.c runs them) */
    bool all = true;
    Value in[8];
    for (int k = 0; k < nd->nin && all; k++) {
      const GNode *p = &g->nodes[nd->in[k]];
      all = p->kind == GN_CONST && p->v.t != VT_BOX;
      in[k] = p->v;
    }
    if (!all || nd->nin - nd->nextra != op_info[nd->op].arity) continue;
    FoldJob job = { (OpKind)nd->op, in, nd->nextra, nd->span, val_null() };
    if (mls_pcall(I, fold_run, &job) != 0) {
      if (I->interrupted) mls_rethrow(I);                  /* Ctrl-C: not the op's error */
      continue;                                            /* leave it to run time */
    }
    mem_free(nd->in);
    nd->in = NULL;
    nd->nin = 0;
    nd->kind = GN_CONST;
    nd->v = job.r;
    folded++;
  }
  if (folded) graph_log(g, "  constant folding: %d op%s computed while staging", folded, folded == 1 ? "" : "s");
}

/* Interp.exact_rewrites: only the rewrites that keep eager's bits */
static void rewrite(Interp *I, Graph *g) {
  bool exact = I->exact_rewrites;
  char at[48];
  Fwd fw;
  fwd_init(I, &fw, g->n);
  for (int i = 0; i < g->n; i++) {
    if ((i & 1023) == 0) opt_poll(I);
    GNode *nd = &g->nodes[i];
    if (!LIVE(nd)) continue;
    fwd_inputs(&fw, nd);
    if (nd->kind != GN_OP || (nd->flags & (GF_TA | GF_TB))) continue;
    where(nd, at, sizeof at);
    int32_t a = nd->nin > 0 ? nd->in[0] : -1;
    switch ((OpKind)nd->op) {
    case OP_POW:                                     /* x^1 -> x (a derivative's x^(2-1)), x^2 -> x*x */
      if (is_num(g, nd->in[1], 1) && g->nodes[a].vt == nd->vt) {
        replace_uses(I, &fw, i, a);
        drop_node(g, i);
        graph_log(g, "  rewrite: x^1 -> x%s", at);
      } else if (is_num(g, nd->in[1], 2)) {
        int32_t in[2] = { a, a };
        set_op(nd, OP_MUL, 2, in);
        graph_log(g, "  rewrite: x^2 -> x*x%s", at);
      }
      break;
    case OP_TRANSPOSE:                               /* t(t(X)) -> X */
      if (is_op(g, a, OP_TRANSPOSE) && g->nodes[g->nodes[a].in[0]].vt == nd->vt) {   /* (t(TRUE) is 1) */
        replace_uses(I, &fw, i, g->nodes[a].in[0]);
        drop_node(g, i);
        graph_log(g, "  rewrite: t(t(X)) -> X%s", at);
      }
      break;
    case OP_EXP:                                     /* exp(log(x)) -> x, NaN where x < 0 */
      if (is_op(g, a, OP_LOG) && !exact) {
        int32_t x = g->nodes[a].in[0];
        GNode xs = g->nodes[x];
        int32_t zero = add_num(g, 0), nan = add_num(g, NAN);
        int32_t gi[2] = { x, zero };
        int32_t ge = add_op(g, OP_GE, 2, gi, &g->nodes[i], xs.vt, xs.rows, xs.cols);
        int32_t in[3] = { ge, x, nan };
        set_op(&g->nodes[i], OP_IFELSE, 3, in);
        graph_log(g, "  rewrite: exp(log(x)) -> x (NaN where x < 0)%s", at);
      }
      break;
    case OP_LOG:
      if (exact) break;
      if (is_op(g, a, OP_ADD)) {                     /* log(1 + exp(x)) -> softplus(x) */
        const GNode *ad = &g->nodes[a];
        int32_t e = -1;
        if (is_num(g, ad->in[0], 1) && is_op(g, ad->in[1], OP_EXP)) e = ad->in[1];
        if (is_num(g, ad->in[1], 1) && is_op(g, ad->in[0], OP_EXP)) e = ad->in[0];
        if (e >= 0 && g->nodes[g->nodes[e].in[0]].vt == nd->vt) {
          int32_t in[1] = { g->nodes[e].in[0] };
          set_op(nd, OP_SOFTPLUS, 1, in);
          graph_log(g, "  rewrite: log(1 + exp(x)) -> softplus(x), stable for large x%s", at);
        }
      } else if (is_op(g, a, OP_SOFTMAX)) {          /* log(softmax(z)) -> logsoftmax(z) */
        int32_t in[1] = { g->nodes[a].in[0] };
        set_op(nd, OP_LOGSOFTMAX, 1, in);
        graph_log(g, "  rewrite: log(softmax(z)) -> logsoftmax(z), stable%s", at);
      }
      break;
    case OP_SUM:                       /* sum(X %*% Y) -> sumprod(X, Y): sum(t(colSums(X)) * rowSums(Y)) */
      if (is_op(g, a, OP_MATMUL) && g->nodes[a].uses == 1 && !exact) {
        int32_t x = g->nodes[a].in[0], y = g->nodes[a].in[1];
        GNode xs = g->nodes[x], ys = g->nodes[y];
        if (xs.vt != VT_MAT || ys.vt != VT_MAT) break;
        int32_t xy[2] = { x, y };                    /* (OP_SUMPROD: the product's sum where */
        set_op(&g->nodes[i], OP_SUMPROD, 2, xy);    /* the product-free form overflows) */
        g->nodes[a].uses = 0;
        graph_log(g, "  rewrite: sum(X %%*%% Y) -> sum(t(colSums(X)) * rowSums(Y)), no product%s", at);
      }
      break;
    case OP_DIV: {                   /* exp(z - rowMaxs(z)) / rowSums(that) -> softmax(z): one pass a row */
      if (exact) break;
      int32_t e = nd->in[0], r = nd->in[1];
      if (!is_op(g, e, OP_EXP) || !is_op(g, r, OP_ROWSUMS) || g->nodes[r].in[0] != e) break;
      int32_t s = g->nodes[e].in[0];
      if (!is_op(g, s, OP_SUB) || !is_op(g, g->nodes[s].in[1], OP_ROWMAXS)) break;
      int32_t z = g->nodes[s].in[0];
      if (g->nodes[g->nodes[s].in[1]].in[0] != z || g->nodes[z].vt != VT_MAT || nd->vt != VT_MAT ||
          g->nodes[z].rows != nd->rows || g->nodes[z].cols != nd->cols)
        break;
      set_op(nd, OP_SOFTMAX, 1, &z);
      graph_log(g, "  rewrite: exp(z - rowMaxs(z)) / rowSums(...) -> softmax(z), one pass over each row%s", at);
      break;
    }
    case OP_SUB: {                   /* s - log(rowSums(exp(s))), s = z - rowMaxs(z) -> logsoftmax(z) */
      if (exact) break;
      int32_t s = nd->in[0], l = nd->in[1];
      if (!is_op(g, s, OP_SUB) || !is_op(g, l, OP_LOG) || !is_op(g, g->nodes[s].in[1], OP_ROWMAXS)) break;
      int32_t rs = g->nodes[l].in[0];
      if (!is_op(g, rs, OP_ROWSUMS) || !is_op(g, g->nodes[rs].in[0], OP_EXP) || g->nodes[g->nodes[rs].in[0]].in[0] != s) break;
      int32_t z = g->nodes[s].in[0];
      if (g->nodes[g->nodes[s].in[1]].in[0] != z || g->nodes[z].vt != VT_MAT || nd->vt != VT_MAT ||
          g->nodes[z].rows != nd->rows || g->nodes[z].cols != nd->cols)
        break;
      set_op(nd, OP_LOGSOFTMAX, 1, &z);
      graph_log(g, "  rewrite: s - log(rowSums(exp(s))), s = z - rowMaxs(z) -> logsoftmax(z), one pass over each row%s", at);
      break;
    }
    case OP_MATMUL:                                  /* t(A) %*% B -> one GEMM with a transpose flag */
      for (int k = 0; k < 2; k++) {
        int32_t s = nd->in[k];
        if (is_op(g, s, OP_TRANSPOSE) && g->nodes[g->nodes[s].in[0]].vt == VT_MAT) {
          nd->in[k] = g->nodes[s].in[0];
          nd->flags |= k == 0 ? GF_TA : GF_TB;
          graph_log(g, "  rewrite: %s -> one GEMM with a transpose flag%s", k == 0 ? "t(A) %*% B" : "A %*% t(B)", at);
        }
      }
      break;
    default: break;
    }
  }
  fwd_apply(I, g, &fw);
}

/* ---- CSE ---- */
static uint64_t node_hash(const GNode *nd) {
  uint64_t h = 1469598103934665603ull ^ ((uint64_t)nd->kind << 32) ^ nd->op ^ ((uint64_t)(nd->flags & (GF_TA | GF_TB)) << 20);
  for (int k = 0; k < nd->nin; k++) h = (h ^ (uint64_t)nd->in[k]) * 1099511628211ull;
  if (nd->kind == GN_CONST) {
    if (nd->v.t == VT_NUM) { uint64_t b; memcpy(&b, &nd->v.u.n, 8); h ^= b * 31; }
    else if (nd->v.t == VT_MAT) h ^= (uint64_t)tensor_rows(nd->v.u.m) * 31 + (uint64_t)tensor_cols(nd->v.u.m);
    else h ^= nd->v.t;               /* not the address: the same buckets on every run (fuzz-smoke) */
  }
  return h;
}

static bool node_same(const GNode *a, const GNode *b) {
  if (a->kind != b->kind || a->op != b->op || (a->flags & (GF_TA | GF_TB)) != (b->flags & (GF_TA | GF_TB)) ||
      a->nin != b->nin || a->nextra != b->nextra)
    return false;
  for (int k = 0; k < a->nin; k++)
    if (a->in[k] != b->in[k]) return false;
  if (a->kind == GN_OP && (a->v.t == VT_MAT || b->v.t == VT_MAT)) {   /* mmchain: the same plan */
    if (a->v.t != VT_MAT || b->v.t != VT_MAT || tensor_numel(a->v.u.m) != tensor_numel(b->v.u.m)) return false;
    return memcmp(tensor_data(a->v.u.m), tensor_data(b->v.u.m), (size_t)tensor_numel(a->v.u.m) * sizeof(double)) == 0;
  }
  if (a->kind == GN_CONST) {
    if (a->v.t != b->v.t) return false;
    if (a->v.t == VT_NUM) return memcmp(&a->v.u.n, &b->v.u.n, 8) == 0;
    if (a->v.t == VT_BOOL) return a->v.u.b == b->v.u.b;
    if (a->v.t == VT_NULL) return true;
    return a->v.u.rc == b->v.u.rc;
  }
  return true;
}

static void cse(Interp *I, Graph *g) {
  int cap = 64;
  while (cap < 2 * g->n) cap *= 2;
  int32_t *tab = scratch_new(I, (size_t)cap * sizeof(int32_t));
  for (int i = 0; i < cap; i++) tab[i] = -1;
  int merged = 0;
  Fwd fw;
  fwd_init(I, &fw, g->n);
  for (int i = 0; i < g->n; i++) {
    if ((i & 1023) == 0) opt_poll(I);
    GNode *nd = &g->nodes[i];
    if (!LIVE(nd)) continue;
    fwd_inputs(&fw, nd);                              /* (the merged inputs: equal ops hash equal) */
    if (nd->kind != GN_OP && nd->kind != GN_CONST) continue;
    uint64_t h = node_hash(nd);
    int s = (int)(h & (uint64_t)(cap - 1));
    for (;; s = (s + 1) & (cap - 1)) {
      if (tab[s] < 0) { tab[s] = i; break; }
      if (node_same(&g->nodes[tab[s]], nd)) {
        replace_uses(I, &fw, i, tab[s]);
        drop_node(g, i);
        if (nd->kind == GN_OP) merged++;
        break;
      }
    }
  }
  fwd_apply(I, g, &fw);
  scratch_free(I, tab);
  if (merged) graph_log(g, "  common subexpressions: %d op%s computed once", merged, merged == 1 ? "" : "s");
}

/* ---- DCE: only what an output, an effect or an error needs (graph_may_fail) ---- */
static void dce(Interp *I, Graph *g) {
  bool *need = scratch_new(I, (size_t)(g->n > 0 ? g->n : 1) * sizeof(bool));
  memset(need, 0, (size_t)(g->n > 0 ? g->n : 1) * sizeof(bool));
  for (int i = 0; i < g->nout; i++) need[g->outs[i]] = true;
  for (int i = 0; i < g->n; i++)
    if (LIVE(&g->nodes[i]) && ((g->nodes[i].flags & GF_EFFECT) || graph_may_fail(g, &g->nodes[i]))) need[i] = true;
  int removed = 0;
  for (int i = g->n - 1; i >= 0; i--) {
    GNode *nd = &g->nodes[i];
    if (!LIVE(nd)) continue;
    if (!need[i]) {
      drop_node(g, i);
      removed += nd->kind == GN_OP || nd->kind == GN_CALL;
      continue;
    }
    for (int k = 0; k < nd->nin; k++) need[nd->in[k]] = true;
  }
  scratch_free(I, need);
  if (removed) graph_log(g, "  dead code: %d node%s nothing needs removed", removed, removed == 1 ? "" : "s");
}

/* ---- elementwise fusion ---- */
#define FMAX_INS 24
#define FMAX_IN 15

typedef struct Group {
  Graph *g;
  int64_t R, C;
  int32_t inputs[FMAX_IN];
  int nin;
  FusedIns ins[FMAX_INS];          /* operands: >= 0 an instruction, < 0 input -1-k */
  int nins;
  int32_t members[FMAX_INS];
  int visits;                      /* nodes collect() has entered: bounds the descent */
  bool full;
} Group;

static bool fusible(const GNode *nd) {
  return LIVE(nd) && nd->kind == GN_OP && (op_info[nd->op].flags & OPF_EW) && nd->nextra == 0 && nd->vt == VT_MAT &&
         nd->rows * nd->cols > 1;
}

static int group_input(Group *gr, int32_t p) {
  for (int k = 0; k < gr->nin; k++)
    if (gr->inputs[k] == p) return -1 - k;
  const GNode *nd = &gr->g->nodes[p];
  bool ok = nd->vt == VT_NUM || nd->vt == VT_BOOL ||
            (nd->vt == VT_MAT && ((nd->rows == gr->R && nd->cols == gr->C) || (nd->rows == 1 && nd->cols == 1) ||
                                  (nd->rows == 1 && nd->cols == gr->C) || (nd->cols == 1 && nd->rows == gr->R)));
  if (!ok || gr->nin == FMAX_IN) { gr->full = true; return -1; }
  gr->inputs[gr->nin] = p;
  return -1 - gr->nin++;
}

/* Emits node x's instruction after those of its single-use elementwise producers. */
static int collect(Group *gr, int32_t x, bool *claimed) {
  GNode *nd = &gr->g->nodes[x];
  gr->visits++;
  int arity = op_info[nd->op].arity, opd[2] = { 0, -1 };
  for (int k = 0; k < arity; k++) {
    int32_t p = nd->in[k];
    const GNode *pn = &gr->g->nodes[p];
    if (k == 1 && p == nd->in[0] && claimed[p]) { opd[1] = opd[0]; continue; }   /* x * x */
    int here = 1 + (arity == 2 && nd->in[1 - k] == p);      /* uses of p by this node */
    /* (a chain longer than a group holds is cut here, not followed to its start: the rest is
    ** this group's input and the root of the next group, so a long chain is split, and the
    ** pass stays linear in the graph) */
    if (fusible(pn) && !claimed[p] && pn->uses == here && pn->rows == gr->R && pn->cols == gr->C &&
        gr->visits < FMAX_INS - 2)
      opd[k] = collect(gr, p, claimed);
    else
      opd[k] = group_input(gr, p);
  }
  if (gr->nins == FMAX_INS) { gr->full = true; return 0; }
  FusedIns *in = &gr->ins[gr->nins];
  in->op = nd->op;
  in->a = (int16_t)opd[0];
  in->b = (int16_t)(arity == 2 ? opd[1] : -32768);
  gr->members[gr->nins] = x;
  claimed[x] = true;
  return gr->nins++;
}

/* ---- the GEMM epilogue: a product whose only use is a fusion group (`X %*% W + b` and the
** activation after it; in a backward pass `G %*% t(W)` times the activation's derivative) is run
** by the group's node: the product is written once and the group's program runs over it right
** after, in one pass, in place on the CPU (graph.c run_fused), instead of a pass that reads the
** product and writes another matrix. The product's arithmetic is the eager product's, the
** epilogue's the eager ops': the same bits. Returns the input of gr that is such a product, or
** -1. (Kept apart from fuse() itself, which only calls it.) */
static int epilogue_input(const Graph *g, const Group *gr) {
  for (int k = 0; k < gr->nin; k++) {
    const GNode *m = &g->nodes[gr->inputs[k]];
    if (!LIVE(m) || m->kind != GN_OP || m->op != OP_MATMUL || m->nin != 2 || m->nextra != 0 || m->vt != VT_MAT ||
        m->rows != gr->R || m->cols != gr->C)
      continue;
    if (g->nodes[m->in[0]].vt != VT_MAT || g->nodes[m->in[1]].vt != VT_MAT) continue;
    int refs = 0;                         /* its every use is an operand of this group */
    for (int q = 0; q < gr->nins; q++) refs += (gr->ins[q].a == -1 - k) + (gr->ins[q].b == -1 - k);
    if (m->uses == refs) return k;
  }
  return -1;
}

/* Makes input k the group's first (register 0, the product's), swapping it with input 0. */
static void epilogue_first(Group *gr, int k) {
  if (k == 0) return;
  int32_t t = gr->inputs[0];
  gr->inputs[0] = gr->inputs[k];
  gr->inputs[k] = t;
  for (int q = 0; q < gr->nins; q++) {
    int16_t *o[2] = { &gr->ins[q].a, &gr->ins[q].b };
    for (int e = 0; e < 2; e++)
      if (*o[e] == -1) *o[e] = (int16_t)(-1 - k);
      else if (*o[e] == -1 - k) *o[e] = -1;
  }
}

static void fuse(Interp *I, Graph *g) {
  size_t n1 = (size_t)(g->n > 0 ? g->n : 1);
  int32_t *consumer = scratch_new(I, n1 * (sizeof(int32_t) + 2 * sizeof(bool)));
  bool *claimed = (bool *)(consumer + n1);
  memset(claimed, 0, n1 * sizeof(bool));
  for (int i = 0; i < g->n; i++) consumer[i] = -1;
  for (int i = 0; i < g->n; i++)
    if (LIVE(&g->nodes[i]))
      for (int k = 0; k < g->nodes[i].nin; k++) consumer[g->nodes[i].in[k]] = i;
  int groups = 0, fused_ops = 0, epilogues = 0;
  for (int r = g->n - 1; r >= 0; r--) {
    opt_poll(I);
    GNode *root = &g->nodes[r];
    if (!fusible(root) || claimed[r]) continue;
    Group gr;
    memset(&gr, 0, sizeof gr);
    gr.g = g;
    gr.R = root->rows;
    gr.C = root->cols;
    collect(&gr, r, claimed);                /* claims its members: given back if it is not made */
    int32_t sum = -1;
    if (root->uses == 1 && consumer[r] >= 0 && g->nodes[consumer[r]].nin == 1 &&
        (is_op(g, consumer[r], OP_SUM) ||
         ((is_op(g, consumer[r], OP_ROWSUMS) || is_op(g, consumer[r], OP_ROWMAXS) || is_op(g, consumer[r], OP_ROWMINS) ||
           is_op(g, consumer[r], OP_SOFTMAX) || is_op(g, consumer[r], OP_LOGSOFTMAX)) &&
          gr.C >= FUSED_ROW_MIN && gr.C <= FUSED_ROW_MAX)))
      sum = consumer[r];                     /* the reduction the group ends in: a whole or a row aggregate */
    int mmk = gr.full ? -1 : epilogue_input(g, &gr);
    if (gr.full || gr.nins + (sum >= 0) + (mmk >= 0) < 2) {
      for (int q = 0; q < gr.nins; q++) claimed[gr.members[q]] = false;
      continue;
    }
    int mm = mmk >= 0;                       /* the node's inputs: A, B, then registers 1.. */
    int32_t mmx = -1;
    if (mm) { epilogue_first(&gr, mmk); mmx = gr.inputs[0]; }
    /* everything the group needs first (held as scratch): the graph is only edited after */
    FusedIns *ins = scratch_new(I, (size_t)gr.nins * sizeof(FusedIns));
    BcastMode *bc = scratch_new(I, (size_t)(gr.nin > 0 ? gr.nin : 1) * sizeof(BcastMode));
    int32_t *newin = scratch_new(I, (size_t)(gr.nin + mm > 0 ? gr.nin + mm : 1) * sizeof(int32_t));
    FusedProg *p = scratch_new(I, sizeof *p);
    Span *fspan = scratch_new(I, (size_t)(gr.nins + 1 + mm) * sizeof(Span));
    Source **fsrc = scratch_new(I, (size_t)(gr.nins + 1 + mm) * sizeof(Source *));
    memset(p, 0, sizeof *p);
    mls_undefer(I, fsrc);                  /* from here nothing allocates: the node owns them */
    mls_undefer(I, fspan);
    mls_undefer(I, p);
    mls_undefer(I, newin);
    mls_undefer(I, bc);
    mls_undefer(I, ins);
    p->nin = gr.nin;
    p->nins = gr.nins;
    p->nregs = gr.nin + gr.nins;
    p->rows = gr.R;
    p->cols = gr.C;
    p->red = sum >= 0 ? (OpKind)g->nodes[sum].op : OP_NONE;
    p->ins = ins;
    p->bc = bc;
    if (mm) {
      p->mm = true;
      p->mm_ta = (g->nodes[mmx].flags & GF_TA) != 0;
      p->mm_tb = (g->nodes[mmx].flags & GF_TB) != 0;
    }
    for (int q = 0; q < gr.nins; q++) {
      FusedIns in = gr.ins[q];
      int16_t a = in.a < 0 ? (int16_t)(-1 - in.a) : (int16_t)(gr.nin + in.a);
      int16_t b = in.b == -32768 ? -1 : in.b < 0 ? (int16_t)(-1 - in.b) : (int16_t)(gr.nin + in.b);
      p->ins[q] = (FusedIns){ in.op, a, b, (int16_t)(gr.nin + q) };
    }
    for (int k = 0; k < gr.nin; k++) {
      const GNode *s = &g->nodes[gr.inputs[k]];
      p->bc[k] = s->vt != VT_MAT || (s->rows == 1 && s->cols == 1) ? BC_SCALAR
               : s->rows == gr.R && s->cols == gr.C                ? BC_FULL
               : s->rows == 1                                       ? BC_ROW
                                                                    : BC_COL;
    }
    for (int q = 0; q <= gr.nins; q++) {   /* each op's place, for errors in a run op by op */
      const GNode *m = &g->nodes[q < gr.nins ? gr.members[q] : sum >= 0 ? sum : r];
      fspan[q] = m->span;
      fsrc[q] = m->src;
      if (fsrc[q]) source_retain(fsrc[q]);
    }
    if (mm) {                                /* the product's place, last */
      fspan[gr.nins + 1] = g->nodes[mmx].span;
      fsrc[gr.nins + 1] = g->nodes[mmx].src;
      if (fsrc[gr.nins + 1]) source_retain(fsrc[gr.nins + 1]);
    }
    for (int q = 0; q < gr.nins; q++)
      if (gr.members[q] != r) drop_node(g, gr.members[q]);
    int32_t at = r;
    if (sum >= 0) { drop_node(g, r); at = sum; claimed[sum] = true; }
    GNode *fn = &g->nodes[at];
    fn->fspan = fspan;
    fn->fsrc = fsrc;
    fn->chain = g->nodes[r].chain;     /* (the group's ops were inlined through the same calls) */
    mem_free(fn->in);
    fn->in = newin;
    if (mm) {
      newin[0] = g->nodes[mmx].in[0];
      newin[1] = g->nodes[mmx].in[1];
      memcpy(newin + 2, gr.inputs + 1, (size_t)(gr.nin - 1) * sizeof(int32_t));
      drop_node(g, mmx);
      epilogues++;
    } else {
      memcpy(fn->in, gr.inputs, (size_t)gr.nin * sizeof(int32_t));
    }
    fn->nin = gr.nin + mm;
    fn->kind = GN_FUSED;
    fn->fused = p;
    groups++;
    fused_ops += gr.nins + (sum >= 0);
  }
  scratch_free(I, consumer);
  if (groups)
    graph_log(g, "  fusion: %d group%s of %d op%s, each one pass over memory without temporaries", groups,
              groups == 1 ? "" : "s", fused_ops, fused_ops == 1 ? "" : "s");
  if (epilogues)
    graph_log(g, "  GEMM epilogue: %d product%s with the elementwise ops after %s in one pass over %s result", epilogues,
              epilogues == 1 ? "" : "s", epilogues == 1 ? "it" : "each", epilogues == 1 ? "its" : "each");
}

/* ---- linear-algebra rewrites, as SystemDS applies them (docs/staging.md "Linear-algebra
** rewrites"). Each changes the order of the additions, so none runs under exact_rewrites;
** each fires only where it saves flops or a pass, by the shapes every node has from its trace
** (a run with other shapes is traced again); each new op gives the eager form's result where
** its own is not finite (ops/products.c). ---- */

/* A flop count for explain: the integer below 1e15, else 3 digits. */
static const char *flops_text(double f, char *buf, size_t n) {
  if (f < 1e15) snprintf(buf, n, "%.0f", f);
  else snprintf(buf, n, "%.3g", f);
  return buf;
}

/* A chain of products: the operands in order and the products, root last; the written order
** as a postfix program (k: operand k; -1: a product). */
typedef struct Chain {
  int32_t leaf[MM_CHAIN_MAX], inner[MM_CHAIN_MAX];
  int nleaf, ninner, entered;
  int8_t orig[2 * MM_CHAIN_MAX];
  int norig;
  bool bad;                        /* an operand that is not a matrix */
} Chain;

/* The chain under x: products of single use are part of it (at most MM_CHAIN_MAX - 1; further
** ones are operands); returns the written order's cost in multiply-adds. */
static double chain_collect(const Graph *g, int32_t x, bool top, Chain *c) {
  const GNode *nd = &g->nodes[x];
  if (top || (is_op(g, x, OP_MATMUL) && nd->uses == 1 && nd->nin == 2 && c->entered < MM_CHAIN_MAX - 1)) {
    c->entered++;
    int32_t a = nd->in[0], b = nd->in[1];
    double ca = chain_collect(g, a, false, c), cb = chain_collect(g, b, false, c);
    c->inner[c->ninner++] = x;
    c->orig[c->norig++] = -1;
    return ca + cb + (double)g->nodes[a].rows * (double)g->nodes[a].cols * (double)g->nodes[b].cols;
  }
  if (nd->vt != VT_MAT) c->bad = true;
  c->orig[c->norig++] = (int8_t)c->nleaf;
  c->leaf[c->nleaf++] = x;
  return 0;
}

static void chain_emit(int8_t split[][MM_CHAIN_MAX], int i, int j, int8_t *out, int *k) {
  if (i == j) { out[(*k)++] = (int8_t)i; return; }
  chain_emit(split, i, split[i][j], out, k);
  chain_emit(split, split[i][j] + 1, j, out, k);
  out[(*k)++] = -1;
}

/* A postfix program as text, "(A %*% B) %*% C" (at most 8 operands: A to H). */
static void chain_text(const int8_t *prog, int n, char *buf, size_t size) {
  char st[8][80];
  int top = 0;
  for (int q = 0; q < 2 * n - 1; q++) {
    if (prog[q] >= 0) { snprintf(st[top++], sizeof st[0], "%c", 'A' + prog[q]); continue; }
    char t[80];
    top--;
    snprintf(t, sizeof t, "(%s %%*%% %s)", st[top - 1], st[top]);
    memcpy(st[top - 1], t, sizeof t);
  }
  size_t len = strlen(st[0]);
  snprintf(buf, size, "%.*s", (int)(len - 2), st[0] + 1);     /* without the outer parentheses */
}

/* A root of a chain (a product no product uses alone): the order of least multiply-adds
** (the textbook dynamic programme over the operands' dimensions), when it is cheaper than the
** written one, as one mmchain node that computes in that order (op_mmchain). */
static void reorder_chain(Interp *I, Graph *g, int32_t r) {
  Chain c;
  memset(&c, 0, sizeof c);
  double written = chain_collect(g, r, true, &c);
  int n = c.nleaf;
  if (c.bad || n < 3) return;
  double p[MM_CHAIN_MAX + 1], m[MM_CHAIN_MAX][MM_CHAIN_MAX];
  int8_t split[MM_CHAIN_MAX][MM_CHAIN_MAX];
  for (int k = 0; k < n; k++) p[k] = (double)g->nodes[c.leaf[k]].rows;
  p[n] = (double)g->nodes[c.leaf[n - 1]].cols;
  for (int i = 0; i < n; i++) m[i][i] = 0;
  for (int len = 2; len <= n; len++)
    for (int i = 0; i + len - 1 < n; i++) {
      int j = i + len - 1;
      m[i][j] = INFINITY;
      for (int s = i; s < j; s++) {
        double cost = m[i][s] + m[s + 1][j] + p[i] * p[s + 1] * p[j + 1];
        if (cost < m[i][j]) { m[i][j] = cost; split[i][j] = (int8_t)s; }
      }
    }
  if (!(m[0][n - 1] < written)) return;
  int8_t best[2 * MM_CHAIN_MAX];
  int nb = 0;
  chain_emit(split, 0, n - 1, best, &nb);
  Tensor *plan = tensor_new_host(I, 1, 4 * n - 1);     /* n, the order to run, the written one */
  tmp_push(I, val_mat(plan));
  double *pl = tensor_data(plan);
  pl[0] = n;
  for (int q = 0; q < 2 * n - 1; q++) { pl[1 + q] = best[q]; pl[2 * n + q] = c.orig[q]; }
  GNode *nd = &g->nodes[r];
  set_op(nd, OP_MMCHAIN, n, c.leaf);
  tmp_pop(I, 1);
  nd->v = val_mat(plan);
  for (int k = 0; k < c.ninner; k++)
    if (c.inner[k] != r) { g->nodes[c.inner[k]].uses = 0; drop_node(g, c.inner[k]); }
  char at[48], from[96] = "", to[96] = "", f0[32], f1[32];
  where(nd, at, sizeof at);
  flops_text(written, f0, sizeof f0);
  flops_text(m[0][n - 1], f1, sizeof f1);
  if (n <= 8) {
    chain_text(c.orig, n, from, sizeof from);
    chain_text(best, n, to, sizeof to);
    graph_log(g, "  rewrite: product chain %s -> %s, %s -> %s multiply-adds%s", from, to, f0, f1, at);
  } else {
    graph_log(g, "  rewrite: product chain of %d matrices reordered, %s -> %s multiply-adds%s", n, f0, f1, at);
  }
}

/* Would fusion make sum(X * Y) one pass anyway, with X's (or Y's) own elementwise op? Then the
** dot would only add a temporary. */
static bool fuses_into(const Graph *g, int32_t p, int32_t mul) {
  const GNode *x = &g->nodes[p], *m = &g->nodes[mul];
  int here = 1 + (m->in[0] == m->in[1]);
  return fusible(x) && x->uses == here && x->rows == m->rows && x->cols == m->cols;
}

/* t(X) %*% (w * (X %*% v)) (w a column or a number, either side of the *) or t(X) %*% (X %*% v),
** v a column: one pass over X instead of two (and no temporaries of X's rows). */
static bool xtwxv_rewrite(Graph *g, int32_t i, const char *at) {
  const GNode *nd = &g->nodes[i];
  int32_t a = nd->in[0], b = nd->in[1], w = -1, xv = b;
  if (!is_op(g, a, OP_TRANSPOSE) || g->nodes[b].uses != 1) return false;
  int32_t x = g->nodes[a].in[0];
  if (is_op(g, b, OP_MUL)) {
    const GNode *mu = &g->nodes[b];
    for (int k = 0; k < 2 && w < 0; k++)
      if (is_op(g, mu->in[k], OP_MATMUL) && g->nodes[mu->in[k]].in[0] == x && mu->in[k] != mu->in[1 - k]) {
        xv = mu->in[k];
        w = mu->in[1 - k];
      }
    if (w < 0) return false;
  }
  const GNode *xs = &g->nodes[x], *xvn = &g->nodes[xv];
  if (!is_op(g, xv, OP_MATMUL) || xvn->in[0] != x || xvn->uses != 1 || xs->vt != VT_MAT || xs->rows * xs->cols < 2) return false;
  const GNode *vs = &g->nodes[xvn->in[1]];
  if (vs->vt != VT_MAT || vs->cols != 1) return false;
  if (w >= 0) {
    const GNode *ws = &g->nodes[w];
    bool ok = ws->vt == VT_NUM || ws->vt == VT_BOOL ||
              (ws->vt == VT_MAT && ((ws->rows == xs->rows && ws->cols == 1) || (ws->rows == 1 && ws->cols == 1)));
    if (!ok) return false;
  }
  int32_t v = xvn->in[1];
  int32_t wi = w >= 0 ? w : add_num(g, 1);       /* (g->nodes may move) */
  g->nodes[b].uses = 0;
  g->nodes[xv].uses = 0;
  set_op(&g->nodes[i], OP_XTWXV, 3, (int32_t[]){ x, wi, v });
  graph_log(g, "  rewrite: %s -> xtwxv(X, %s, v), one pass over X%s",
            w >= 0 ? "t(X) %*% (w * (X %*% v))" : "t(X) %*% (X %*% v)", w >= 0 ? "w" : "1", at);
  return true;
}

static void la_rewrite(Interp *I, Graph *g) {
  size_t n1 = (size_t)(g->n > 0 ? g->n : 1);
  int32_t *consumer = scratch_new(I, n1 * sizeof(int32_t));
  for (int i = 0; i < g->n; i++) consumer[i] = -1;
  for (int i = 0; i < g->n; i++)
    if (LIVE(&g->nodes[i]))
      for (int k = 0; k < g->nodes[i].nin; k++) consumer[g->nodes[i].in[k]] = i;
  /* 1. chains of products, at their roots; a chain whose result only a reduction reads is
  ** left to that reduction's rewrite below, which drops the last product altogether */
  for (int i = 0; i < g->n; i++) {
    if ((i & 1023) == 0) opt_poll(I);
    const GNode *nd = &g->nodes[i];
    if (!is_op(g, i, OP_MATMUL) || nd->vt != VT_MAT) continue;
    int32_t u = nd->uses == 1 ? consumer[i] : -1;
    if (u >= 0 && (is_op(g, u, OP_MATMUL) || is_op(g, u, OP_SUM) || (is_op(g, u, OP_ROWSUMS) && nd->cols > 1) ||
                   (is_op(g, u, OP_COLSUMS) && nd->rows > 1) || (is_op(g, u, OP_DIAG) && nd->rows == nd->cols && nd->rows > 1)))
      continue;
    reorder_chain(I, g, i);
  }
  /* 2. the reductions of a product, sum(X * Y), t(X) %*% X */
  char at[48], f0[32], f1[32];
  for (int i = 0; i < g->n; i++) {
    if ((i & 1023) == 0) opt_poll(I);
    GNode *nd = &g->nodes[i];
    if (!LIVE(nd) || nd->kind != GN_OP || (nd->flags & (GF_TA | GF_TB)) || nd->nin < 1) continue;
    int32_t a = nd->in[0];
    GNode *an = &g->nodes[a];
    bool prod = is_op(g, a, OP_MATMUL) && an->uses == 1 && g->nodes[an->in[0]].vt == VT_MAT && g->nodes[an->in[1]].vt == VT_MAT;
    double m = prod ? (double)g->nodes[an->in[0]].rows : 0, k = prod ? (double)g->nodes[an->in[0]].cols : 0;
    double c = prod ? (double)g->nodes[an->in[1]].cols : 0;
    where(nd, at, sizeof at);
    switch ((OpKind)nd->op) {
    case OP_SUM:                                 /* sum(X * Y) -> dot(X, Y); on a device, fusion's kernel */
      if (I->device == I->cpu && is_op(g, a, OP_MUL) && an->uses == 1 && an->vt == VT_MAT && an->rows * an->cols > 1) {
        int32_t x = an->in[0], y = an->in[1];
        const GNode *xs = &g->nodes[x], *ys = &g->nodes[y];
        if (xs->vt != VT_MAT || ys->vt != VT_MAT || xs->rows != an->rows || xs->cols != an->cols || ys->rows != an->rows ||
            ys->cols != an->cols || fuses_into(g, x, a) || fuses_into(g, y, a))
          break;
        set_op(nd, OP_DOT, 2, (int32_t[]){ x, y });
        an->uses = 0;
        graph_log(g, "  rewrite: sum(X * Y) -> dot(X, Y), one pass without the product's temporary%s", at);
      }
      break;
    case OP_ROWSUMS:                             /* m k c + m c -> k c + m k (rowSums of one column: itself) */
      if (prod && c > 1 && k * c + m * k < m * k * c + m * c) {
        set_op(nd, OP_ROWSUMSPROD, 2, an->in);
        an->uses = 0;
        graph_log(g, "  rewrite: rowSums(X %%*%% Y) -> X %%*%% rowSums(Y), %s -> %s multiply-adds%s",
                  flops_text(m * k * c + m * c, f0, sizeof f0), flops_text(k * c + m * k, f1, sizeof f1), at);
      }
      break;
    case OP_COLSUMS:                             /* m k c + m c -> m k + k c */
      if (prod && m > 1 && m * k + k * c < m * k * c + m * c) {
        set_op(nd, OP_COLSUMSPROD, 2, an->in);
        an->uses = 0;
        graph_log(g, "  rewrite: colSums(X %%*%% Y) -> colSums(X) %%*%% Y, %s -> %s multiply-adds%s",
                  flops_text(m * k * c + m * c, f0, sizeof f0), flops_text(m * k + k * c, f1, sizeof f1), at);
      }
      break;
    case OP_DIAG:                                /* a square product's diagonal: m m k -> m k */
      if (prod && m == c && m > 1) {
        bool trace = nd->uses == 1 && consumer[i] >= 0 && is_op(g, consumer[i], OP_SUM);
        set_op(nd, OP_DIAGPROD, 2, an->in);
        an->uses = 0;
        graph_log(g, "  rewrite: %s(X %%*%% Y) -> %s(X * t(Y)), no product, %s -> %s multiply-adds%s",
                  trace ? "trace" : "diag", trace ? "sum" : "rowSums", flops_text(m * m * k, f0, sizeof f0),
                  flops_text(m * k, f1, sizeof f1), at);
      }
      break;
    case OP_MATMUL: {                            /* t(X) %*% X, X %*% t(X): half the flops */
      int32_t b = nd->in[1];
      if (xtwxv_rewrite(g, i, at)) break;
      bool cross = is_op(g, a, OP_TRANSPOSE) && an->in[0] == b && g->nodes[b].vt == VT_MAT;
      bool tcross = is_op(g, b, OP_TRANSPOSE) && g->nodes[b].in[0] == a && an->vt == VT_MAT;
      if ((!cross && !tcross) || nd->vt != VT_MAT || nd->rows < 2) break;
      int32_t x = cross ? b : a;
      set_op(nd, cross ? OP_CROSSPROD : OP_TCROSSPROD, 1, &x);
      graph_log(g, "  rewrite: %s -> %s(X), one symmetric rank-k update (half the multiply-adds)%s",
                cross ? "t(X) %*% X" : "X %*% t(X)", cross ? "crossprod" : "tcrossprod", at);
      break;
    }
    default: break;
    }
  }
  scratch_free(I, consumer);
}

/* ---- W * e at a sparse W's stored cells (OP_MASKED, ops/masked.c) ---- */
typedef struct MaskProg {
  double pl[4 * MK_MAX];           /* the program (ops.h) */
  int n;
  int32_t leaf[MK_MAX];            /* the node of input 1 + k */
  int nleaf;
  int32_t inner[MK_MAX];           /* the nodes the program replaces */
  int ninner, prods;
  int64_t rows, cols;
} MaskProg;

static int mk_emit(MaskProg *m, int code, int a, int b, int fl) { return op_masked_emit(m->pl, &m->n, code, a, b, fl); }

/* Node x read as a leaf: a number, or a matrix the result's shape, a row or column of it, 1x1. */
static int mk_leaf(const Graph *g, MaskProg *m, int32_t x, bool operand) {
  const GNode *nd = &g->nodes[x];
  if (operand ? nd->vt != VT_MAT || (nd->flags & GF_SPARSE)
              : !(nd->vt == VT_NUM || nd->vt == VT_BOOL ||
                  (nd->vt == VT_MAT && (nd->rows == m->rows || nd->rows == 1) && (nd->cols == m->cols || nd->cols == 1))))
    return -1;
  int k = 0;
  while (k < m->nleaf && m->leaf[k] != x) k++;
  if (k == m->nleaf) {
    if (m->nleaf == MK_MAX - 1) return -1;
    m->leaf[m->nleaf++] = x;
  }
  return mk_emit(m, MK_LEAF, k + 1, 0, 0);
}

/* Node x (want: the uses it must have, all from its consumer here) as an instruction of m: the
** ops the program has, each the result's shape and read by nothing else, else a leaf; -1 when
** it cannot be written so. */
static int mk_collect(Interp *I, const Graph *g, MaskProg *m, int32_t x, int want, int depth) {
  const GNode *nd = &g->nodes[x];
  bool op = LIVE(nd) && nd->kind == GN_OP && nd->nextra == 0 && nd->uses == want && depth < 32 && nd->vt == VT_MAT &&
            nd->rows == m->rows && nd->cols == m->cols && !(nd->flags & GF_EFFECT) && !graph_may_fail(g, nd) &&
            m->ninner < MK_MAX;
  OpKind o = (OpKind)nd->op;
  if (!op || (nd->flags & (GF_TA | GF_TB) && o != OP_MATMUL) ||
      !(o == OP_MATMUL || o == OP_ADD || o == OP_SUB || o == OP_MUL || o == OP_MULZ || o == OP_NEG || o == OP_LOG ||
        o == OP_EXP || (o == OP_POW && is_num(g, nd->in[1], 2))))
    return mk_leaf(g, m, x, false);
  m->inner[m->ninner++] = x;
  int a, b;
  switch (o) {
  case OP_MATMUL:
    a = mk_leaf(g, m, nd->in[0], true);
    b = a < 0 ? -1 : mk_leaf(g, m, nd->in[1], true);
    m->prods++;
    return b < 0 ? -1 : mk_emit(m, MK_PROD, a, b, (nd->flags & GF_TA ? MK_TA : 0) | (nd->flags & GF_TB ? MK_TB : 0));
  case OP_NEG: case OP_POW: case OP_LOG: case OP_EXP:
    a = mk_collect(I, g, m, nd->in[0], 1, depth + 1);
    return a < 0 ? -1 : mk_emit(m, o == OP_NEG ? MK_NEG : o == OP_LOG ? MK_LOG : o == OP_EXP ? MK_EXP : MK_SQ, a, 0, 0);
  default:
    if ((o == OP_MUL || o == OP_MULZ) && nd->in[0] == nd->in[1]) {    /* x * x, as x^2 is rewritten */
      a = mk_collect(I, g, m, nd->in[0], 2, depth + 1);
      return a < 0 ? -1 : mk_emit(m, MK_SQ, a, 0, 0);
    }
    a = mk_collect(I, g, m, nd->in[0], 1, depth + 1);
    b = a < 0 ? -1 : mk_collect(I, g, m, nd->in[1], 1, depth + 1);
    return b < 0 ? -1 : mk_emit(m, o == OP_ADD ? MK_ADD : o == OP_SUB ? MK_SUB : o == OP_MULZ ? MK_MULZ : MK_MUL, a, b, 0);
  }
}

/* Is node x's value sparse (its format seen while staging), or made so from a sparse one by ops
** that keep zeros (an abstract trace computed no formats but its arguments' and captures')? */
static bool sparse_node(const Graph *g, int32_t x, int depth) {
  const GNode *nd = &g->nodes[x];
  if (nd->flags & GF_SPARSE) return true;
  if (depth > 8 || nd->kind != GN_OP || nd->vt != VT_MAT || (nd->flags & (GF_TA | GF_TB)) || nd->nextra) return false;
  for (int k = 0; k < nd->nin; k++) {
    const GNode *in = &g->nodes[nd->in[k]];
    bool same = in->vt == VT_MAT && in->rows == nd->rows && in->cols == nd->cols;
    switch ((OpKind)nd->op) {
    case OP_MUL: case OP_MULZ: case OP_NEG: case OP_ABS: case OP_SIGN:
      if (same && sparse_node(g, nd->in[k], depth + 1)) return true;
      break;
    case OP_NE:
      if (same && is_num(g, nd->in[1 - k], 0) && sparse_node(g, nd->in[k], depth + 1)) return true;
      break;
    default: return false;
    }
  }
  return false;
}

/* May W * e (node i) read W, dense while staging with few nonzeros (GF_ZEROS), as sparse? Only
** where the sparse result this gives cannot be seen: a graph result or a variable would print
** as sparse where eager code has a dense matrix, so every consumer must be a product or a sum
** (whose results are dense either way), and the additions' order may change (not under
** MLS_EXACT_REWRITES). On the CPU only: a sparse matrix lives there. */
static bool masked_dense_w(const Interp *I, const Graph *g, int32_t i, int32_t w) {
  if (I->exact_rewrites || I->device != I->cpu || !(g->nodes[w].flags & GF_ZEROS) || g->nodes[i].uses < 1) return false;
  for (int k = 0; k < g->nout; k++)
    if (g->outs[k] == i) return false;
  int found = 0;
  for (int32_t j = i + 1; j < g->n; j++) {
    const GNode *c = &g->nodes[j];
    bool reads = false;
    for (int k = 0; k < c->nin; k++) reads = reads || c->in[k] == i;
    if (!reads || !LIVE(c)) continue;
    if (c->kind != GN_OP || !(c->op == OP_MATMUL || c->op == OP_SUM || c->op == OP_ROWSUMS || c->op == OP_COLSUMS) ||
        c->nextra)
      return false;
    for (int k = 0; k < c->nin; k++) found += c->in[k] == i;
  }
  return found == g->nodes[i].uses;
}

/* W * e with W sparse while staging and e built of products and arithmetic only it reads: one
** masked node, which computes e at W's stored cells (sampled products) instead of densely. */
static bool masked_rewrite(Interp *I, Graph *g) {
  bool any = false;
  for (int i = 0; i < g->n; i++) {
    if ((i & 1023) == 0) opt_poll(I);
    const GNode *nd = &g->nodes[i];
    bool z = is_op(g, i, OP_MULZ);                  /* grad's zero-safe product: x *0 y is 0 where x is */
    if (!(z || is_op(g, i, OP_MUL)) || nd->vt != VT_MAT || nd->in[0] == nd->in[1]) continue;
    for (int s = 0; s < 2; s++) {
      const GNode *w = &g->nodes[nd->in[s]];
      if (w->vt != VT_MAT || w->rows != nd->rows || w->cols != nd->cols) continue;
      bool dense = !sparse_node(g, nd->in[s], 0);
      if (dense && !masked_dense_w(I, g, i, nd->in[s])) continue;
      MaskProg m;
      m.n = m.nleaf = m.ninner = m.prods = 0;
      m.rows = nd->rows;
      m.cols = nd->cols;
      if (mk_collect(I, g, &m, nd->in[1 - s], 1, 0) < 0 || m.prods == 0) continue;
      int32_t ins[MK_MAX];
      ins[0] = nd->in[s];
      memcpy(ins + 1, m.leaf, (size_t)m.nleaf * sizeof(int32_t));
      Tensor *plan = tensor_new_host(I, 1, 1 + 4 * m.n);
      tensor_data(plan)[0] = (!z ? MK_ROOT_MUL : s == 0 ? MK_ROOT_ZW : MK_ROOT_ZE) + (dense ? MK_DENSE_W : 0);
      memcpy(tensor_data(plan) + 1, m.pl, (size_t)(4 * m.n) * sizeof(double));
      tmp_push(I, val_mat(plan));
      GNode *mn = &g->nodes[i];
      set_op(mn, OP_MASKED, 1 + m.nleaf, ins);
      tmp_pop(I, 1);
      mn->v = val_mat(plan);
      for (int k = 0; k < m.ninner; k++) { g->nodes[m.inner[k]].uses = 0; drop_node(g, m.inner[k]); }
      char at[48];
      where(mn, at, sizeof at);
      graph_log(g, "  rewrite: W * (%d product%s and %d op%s) -> masked: at %s W's stored cells only%s", m.prods,
                m.prods == 1 ? "" : "s", m.ninner - m.prods, m.ninner - m.prods == 1 ? "" : "s",
                dense ? "mostly-zero dense (read as sparse)" : "sparse", at);
      any = true;
      break;
    }
  }
  return any;
}

/* ---- order and compaction ---- */
static void toposort_compact(Interp *I, Graph *g) {
  int n = g->n;
  size_t n1 = (size_t)(n > 0 ? n : 1);
  /* one scratch block (order, stack, map, state) and the new node array, both made before
  ** the graph changes: a failure leaves it as it was */
  int32_t *order = scratch_new(I, n1 * (4 * sizeof(int32_t) + 1)), no = 0;
  int32_t *stack = order + n1, *map = stack + 2 * n1;
  uint8_t *state = (uint8_t *)(map + n1);                           /* 0 new, 1 open, 2 done */
  memset(state, 0, n1);
  GNode *nodes = mem_alloc(n1 * sizeof(GNode));
  for (int i = 0; i < n; i++) {
    if (!LIVE(&g->nodes[i]) || state[i]) continue;
    int sp = 0;
    stack[sp++] = i;
    while (sp) {
      int32_t x = stack[sp - 1];
      if (state[x] == 0) {
        state[x] = 1;
        const GNode *nd = &g->nodes[x];
        for (int k = nd->nin - 1; k >= 0; k--)
          if (state[nd->in[k]] == 0) stack[sp++] = nd->in[k];
      } else {
        sp--;
        if (state[x] == 1) { state[x] = 2; order[no++] = x; }
      }
    }
  }
  for (int i = 0; i < n; i++) map[i] = -1;
  for (int j = 0; j < no; j++) { nodes[j] = g->nodes[order[j]]; map[order[j]] = j; }
  for (int i = 0; i < n; i++) {                               /* free what was dropped */
    if (map[i] >= 0) continue;
    GNode *nd = &g->nodes[i];
    val_release(nd->v);
    mem_free(nd->in);
    mem_free(nd->names);
    if (nd->src) source_release(nd->src);
    graph_fused_places_free(nd);             /* (first: it reads the program's length) */
    if (nd->fused) { mem_free(nd->fused->ins); mem_free(nd->fused->bc); mem_free(nd->fused); }
    loop_free(nd->loop);
    loop_rev_free(nd->rev);
  }
  for (int j = 0; j < no; j++)
    for (int k = 0; k < nodes[j].nin; k++) nodes[j].in[k] = map[nodes[j].in[k]];
  for (int i = 0; i < g->nout; i++) g->outs[i] = map[g->outs[i]];
  mem_free(g->nodes);
  g->nodes = nodes;
  g->n = g->cap = no;
  /* GOut */
  GOut *st[256];
  int top = 0;
  st[top++] = &g->out;
  while (top) {
    GOut *o = st[--top];
    if (o->node >= 0) o->node = map[o->node];
    for (int i = 0; i < o->n && o->kids && top < 256; i++) st[top++] = &o->kids[i];
  }
  scratch_free(I, order);
}

void graph_optimize(Interp *I, Graph *g) {
  opt_poll(I);
  graph_count_uses(g);
  fold_constants(I, g);
  dce(I, g);                          /* rewrites see only what is needed */
  opt_poll(I);
  toposort_compact(I, g);
  graph_count_uses(g);
  if (!I->exact_rewrites) {           /* (each changes the order of additions) */
    la_rewrite(I, g);
    toposort_compact(I, g);           /* (xtwxv's weight 1 is a new node) */
    graph_count_uses(g);
  }
  rewrite(I, g);
  opt_poll(I);
  toposort_compact(I, g);             /* nodes a rewrite added go before their users */
  graph_count_uses(g);
  cse(I, g);
  dce(I, g);
  opt_poll(I);
  toposort_compact(I, g);
  graph_count_uses(g);
  if (I->sparse_mode != SPARSE_EXACT && masked_rewrite(I, g)) graph_count_uses(g);
  fuse(I, g);
  opt_poll(I);
  toposort_compact(I, g);
  graph_count_uses(g);
  g->after = graph_live_count(g);
  g->peak_after = graph_peak_bytes(g);
  if (g->peak_after < g->peak_before)
    graph_log(g, "  memory plan: peak %zu -> %zu bytes (buffers freed at their last use and reused)", g->peak_before,
              g->peak_after);
}
