/*
** graph.c — the staged graph's nodes and graph_run, which runs them in order through the op
** entry points of ops.c (the eager code, so results and errors are eager mode's), releasing
** each value after its last use so its buffer is reused by the next result of that size.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "autodiff.h"
#include "backend/scalar.h"
#include "builtins.h"
#include "err.h"
#include "mem.h"
#include "staging/graph.h"
#include "staging/stage.h"
#include "tensor.h"

Graph *graph_new(void) {
  Graph *g = mem_calloc(1, sizeof *g);
  g->out.node = -1;
  g->out.v = val_null();
  return g;
}

static void gout_free(GOut *o) {
  val_release(o->v);
  for (int i = 0; i < o->n && o->kids; i++) gout_free(&o->kids[i]);
  mem_free(o->kids);
  mem_free(o->names);
}

void gout_clear(Graph *g) {
  gout_free(&g->out);
  memset(&g->out, 0, sizeof g->out);
  g->out.v = val_null();
  g->out.node = -1;
}

void graph_fused_places_free(GNode *nd) {
  if (nd->fsrc && nd->fused)
    for (int q = 0; q <= nd->fused->nins + nd->fused->mm; q++)   /* (the ops', the reduction's, the product's) */
      if (nd->fsrc[q]) source_release(nd->fsrc[q]);
  mem_free(nd->fsrc);
  mem_free(nd->fspan);
  nd->fsrc = NULL;
  nd->fspan = NULL;
}

void graph_free(Graph *g) {
  if (!g) return;
  graph_replay_free(g);                      /* first: its recording uses the fusion programs */
  for (int i = 0; i < g->n; i++) {
    GNode *nd = &g->nodes[i];
    val_release(nd->v);
    mem_free(nd->in);
    mem_free(nd->names);
    if (nd->src) source_release(nd->src);
    graph_fused_places_free(nd);            /* (first: it reads the program's length) */
    if (nd->fused) {
      mem_free(nd->fused->ins);
      mem_free(nd->fused->bc);
      mem_free(nd->fused);
    }
    loop_free(nd->loop);
    loop_rev_free(nd->rev);
  }
  for (int i = 0; i < g->nchains; i++) {
    for (int k = 0; k < g->chains[i].n; k++)
      if (g->chains[i].f[k].call_src) source_release(g->chains[i].f[k].call_src);
    mem_free(g->chains[i].f);
  }
  mem_free(g->chains);
  mem_free(g->fg);
  mem_free(g->asgdepth);
  mem_free(g->asgslot);
  mem_free(g->nodes);
  gout_free(&g->out);
  mem_free(g->outs);
  mem_free(g->asg);
  mem_free(g->asgsym);
  mem_free(g);
}

static void gout_children(const GOut *o, GcVisit fn, void *ctx) {
  gc_visit_value(o->v, fn, ctx);
  for (int i = 0; i < o->n && o->kids; i++) gout_children(&o->kids[i], fn, ctx);
}

void graph_children(const Graph *g, GcVisit fn, void *ctx) {   /* what graph_free releases */
  for (int i = 0; i < g->n; i++) {
    gc_visit_value(g->nodes[i].v, fn, ctx);
    const GNode *nd = &g->nodes[i];           /* (a reverse loop node shares its loop node's: */
    if (nd->loop && (nd->kind == GN_LOOP || nd->loop->refs == 1)) loop_children(nd->loop, fn, ctx);   /* once) */
  }
  gout_children(&g->out, fn, ctx);
}

bool graph_mostly_zeros(const Tensor *t) {
  if (t->st->sparse || t->st->abstract || t->st->dev) return false;
  int64_t r = tensor_rows(t), c = tensor_cols(t), n = r * c;
  if (n < 4096) return false;
  const double *d = tensor_data(t);
  int64_t s0 = t->stride[0], s1 = t->stride[1], nz = 0;
  for (int64_t q = 0; q < 1024; q++) {           /* a sample of evenly spaced cells */
    int64_t at = q * (n / 1024);
    nz += d[(at / c) * s0 + (at % c) * s1] != 0;
  }
  if (nz > 2 * MK_DENSE_W_MAX * 1024) return false;   /* clearly too dense: no count */
  nz = 0;
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) nz += d[i * s0 + j * s1] != 0;
  return (double)nz <= MK_DENSE_W_MAX * (double)n;
}

void graph_node_shape(GNode *nd, Value v) {
  Value p = ad_primal(v);
  nd->vt = p.t;
  if (p.t == VT_MAT) { nd->rows = tensor_rows(p.u.m); nd->cols = tensor_cols(p.u.m); }
  if (p.t == VT_MAT && p.u.m->st->sparse && !p.u.m->st->abstract) nd->flags |= GF_SPARSE;
  if (p.t == VT_MAT && (nd->kind == GN_PARAM || nd->kind == GN_CAPTURE) && graph_mostly_zeros(p.u.m)) nd->flags |= GF_ZEROS;
  if (p.t == VT_LIST) nd->rows = p.u.l->n;          /* a captured list: its length is checked */
}

int32_t graph_add(Graph *g, GKind k, Span sp, Source *src) {
  if (g->n == g->cap) {
    int cap = g->cap ? g->cap * 2 : 32;
    g->nodes = mem_realloc(g->nodes, (size_t)cap * sizeof(GNode));
    g->cap = cap;
  }
  GNode *nd = &g->nodes[g->n];
  memset(nd, 0, sizeof *nd);
  nd->kind = (uint8_t)k;
  nd->v = val_null();
  nd->vt = VT_NULL;
  nd->span = sp;
  nd->src = src;
  nd->chain = -1;
  if (src) source_retain(src);
  return g->n++;
}

/* One call of a chain: fr's, or q's (a frame inlined into a running graph) with its entry's place
** named (the run's own call site: the frame is copied into another graph). */
static void chain_frame(InlineFrame *f, const Frame *fr, const InlineFrame *q, Interp *I) {
  if (q) {
    *f = *q;
    if (q->entry && I->gentry_src) { f->call_src = I->gentry_src; f->call_site = I->gentry_sp; }
  } else {
    snprintf(f->name, sizeof f->name, "%s", !fr->fi ? "source" : fr->fi->name ? fr->fi->name->name : "<anonymous>");
    f->call_src = fr->call_src;
    f->call_site = fr->call_site;
  }
  f->entry = false;
}

void graph_trace_base(Interp *I, Graph *g, int fbase) {
  g->fbase = fbase;
  g->base_chain = I->gchain;
  g->base_up = I->gchain_up;
  g->base_at = I->gchain_at;
}

/* The calls a node recorded now was inlined through, outermost first: the frames from g's
** base; where a graph is running that began inside g's trace (a jit function called while g
** is traced runs its graph), that node's inlined calls after the frame it runs in, as err.c's
** trace puts them (the loop nodes' chains around it first), then the frames above. */
int32_t graph_chain(Interp *I, Graph *g) {
  InlineFrame f[64];
  int m = 0;
  bool running = (I->gchain || I->gchain_up) &&
                 (I->gchain != g->base_chain || I->gchain_up != g->base_up || I->gchain_at != g->base_at);
  for (int i = g->fbase; i <= I->nframes && m < 64; i++) {
    if (running && i == I->gchain_at) {
      const ChainLink *ls[32];
      int nl = 0;
      ChainLink self = { I->gchain, I->gchain_up };
      for (const ChainLink *l = &self; l && nl < 32; l = l->up) ls[nl++] = l;
      for (int k = nl - 1; k >= 0; k--)      /* the outermost link first */
        for (int c = 0; ls[k]->c && c < ls[k]->c->n && m < 64; c++) chain_frame(&f[m++], NULL, &ls[k]->c->f[c], I);
    }
    if (i == I->nframes) break;
    const Frame *fr = &I->frames[i];
    if (!fr->entered || m >= 64) continue;
    chain_frame(&f[m], fr, NULL, I);
    f[m].entry = m == 0 && g->entry_src && fr->call_src == g->entry_src && fr->call_site.start == g->entry_sp.start &&
                 fr->call_site.end == g->entry_sp.end;
    m++;
  }
  if (m <= 0) return -1;
  if (g->nchains > 0) {                      /* the same as the last one (nodes come in runs) */
    const InlineChain *c = &g->chains[g->nchains - 1];
    bool same = c->n == m;
    for (int k = 0; k < m && same; k++)
      same = c->f[k].call_src == f[k].call_src && c->f[k].call_site.start == f[k].call_site.start &&
             c->f[k].call_site.end == f[k].call_site.end && c->f[k].entry == f[k].entry && strcmp(c->f[k].name, f[k].name) == 0;
    if (same) return g->nchains - 1;
  }
  InlineFrame *copy = mem_alloc((size_t)m * sizeof *copy);
  memcpy(copy, f, (size_t)m * sizeof *copy);
  for (int k = 0; k < m; k++)
    if (copy[k].call_src) source_retain(copy[k].call_src);
  g->chains = mem_realloc(g->chains, (size_t)(g->nchains + 1) * sizeof *g->chains);
  g->chains[g->nchains] = (InlineChain){ m, copy };
  return g->nchains++;
}

void graph_mark_dynamic(Graph *g, Interp *I, Span sp, const char *fmt, ...) {
  if (g->dynamic) return;
  char what[150], where[96] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (I && g->abstract) interp_abstract_note(I, sp, "%s", what);   /* the rest would run eagerly, on no values */
  g->dynamic = true;
  if (I && I->src && sp.end > 0) diag_where(where, sizeof where, I->src, sp.start);
  snprintf(g->why, sizeof g->why, "%s%s%s", where, where[0] ? ": " : "", what);
}

void graph_log(Graph *g, const char *fmt, ...) {
  if (g->loglen + 2 >= sizeof g->log) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(g->log + g->loglen, sizeof g->log - g->loglen - 1, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  g->loglen += (size_t)k;
  if (g->loglen > sizeof g->log - 2) g->loglen = sizeof g->log - 2;
  g->log[g->loglen++] = '\n';
  g->log[g->loglen] = '\0';
}

/* ---- running ---- */
static bool same_shape(const GNode *nd, Value v) {
  Value p = ad_primal(v);
  if (p.t != nd->vt) return false;
  if (p.t == VT_LIST) return p.u.l->n == nd->rows;
  return p.t != VT_MAT || (tensor_rows(p.u.m) == nd->rows && tensor_cols(p.u.m) == nd->cols);
}

/* Has r the type and shape the trace gave node nd? (A number or logical a capture keeps on
** the device is a 1x1 matrix, replay.c.) */
/* Can a later run of node nd give a result of another shape, its inputs' shapes the same: a
** builtin's matrix, a range, an index by a mask or a flag, a reshape or a convolution whose
** sizes are staged values? graph_run_nodes then drops that run as stale and the block is
** traced again, safe while no effect has run in it; so such a node that is an effect
** (rand(rows = n)) or comes after one makes the block eager. */
bool graph_shape_varies(const Graph *g, const GNode *nd) {
  if (nd->vt != VT_MAT || (nd->flags & GF_CONSTANT)) return false;
  if (nd->kind == GN_ITEM) return false;     /* a loop's carried values keep their shapes (loop.c) */
  int from = 0;
  if (nd->kind == GN_OP) {
    switch ((OpKind)nd->op) {
    case OP_RANGE: break;
    case OP_INDEX:
      for (int k = 1; k < nd->nin; k++) {
        const GNode *x = &g->nodes[nd->in[k]];
        if (!(x->flags & GF_CONSTANT) && (x->vt == VT_MAT || x->vt == VT_BOOL)) return true;
      }
      return false;
    case OP_RESHAPE: case OP_CONV2D: case OP_CONV2D_BWD_DATA: case OP_CONV2D_BWD_FILT: case OP_MAX_POOL:
    case OP_MAX_POOL_BWD: case OP_MAX_POOL_GATHER: case OP_AVG_POOL: case OP_AVG_POOL_BWD:
      from = nd->nin - nd->nextra;               /* the sizes */
      break;
    default: return false;
    }
  }
  for (int k = from; k < nd->nin; k++)
    if (!(g->nodes[nd->in[k]].flags & GF_CONSTANT)) return true;
  return false;
}

/* Can a later run of nd raise an error its traced run did not, its inputs' shapes the same?
** Such nodes (and the captures, whose shapes are the guards) are kept by dead-code
** elimination: it removes computations, never an error the program would raise. */
bool graph_may_fail(const Graph *g, const GNode *nd) {
  switch ((GKind)nd->kind) {
  case GN_PARAM: case GN_CAPTURE: case GN_CALL: case GN_LOOP: case GN_RLOOP: return true;
  case GN_CONST: case GN_ITEM: return false;
  case GN_OP: case GN_FUSED: break;
  }
  if (nd->kind == GN_FUSED) return false;
  switch ((OpKind)nd->op) {
  case OP_RANGE: case OP_SOLVE: case OP_INV: case OP_DET: case OP_ALLREDUCE: return true;
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    return true;                           /* not symmetric, not positive definite, no convergence */
  case OP_INDEX: case OP_SCATTER:
    for (int k = 1; k < nd->nin; k++)
      if (!(g->nodes[nd->in[k]].flags & GF_CONSTANT)) return true;
    return false;
  default: return graph_shape_varies(g, nd);
  }
}

/* A masked node's run (ops/masked.c). Run while a stage traces its inputs (a jit graph run in
** a staged block): the sparse path on their plain values, recorded on those stages as one node;
** where it does not apply, the ops one by one, each recorded. */
static Value run_masked(Interp *I, int n, const Value *args, Value plan, Span sp) {
  bool boxed = false, staged = true;
  Value un[MK_MAX], r;
  for (int k = 0; k < n; k++) {
    for (Value x = args[k]; x.t == VT_BOX; x = x.u.box->v) {
      boxed = true;
      staged = staged && x.u.box->tape->graph && x.u.box->tape->active;
    }
    un[k] = ad_primal(args[k]);
  }
  if (boxed && staged && n <= 12 && op_masked_sparse(I, n, un, plan, &r)) return stage_record_nested(I, OP_MASKED, n, args, r, plan, sp);
  return op_masked(I, n, args, plan, sp);
}

static bool as_traced(const Interp *I, const GNode *nd, Value r) {
  if (nd->vt == VT_UNBOUND) return true;     /* (a call whose NULL was not recorded) */
  if (same_shape(nd, r)) return true;
  Value p = ad_primal(r);
  return I->dev_scalars && (nd->vt == VT_NUM || nd->vt == VT_BOOL) && p.t == VT_MAT && tensor_numel(p.u.m) == 1;
}

/* A %*% B with the transpose flags of a rewritten product (plain matrices: one GEMM). */
static Value matmul_flags(Interp *I, Value a, bool ta, Value b, bool tb, Span sp) {
  if (a.t != VT_MAT || b.t != VT_MAT || a.u.m->st->sparse || b.u.m->st->sparse) {
    /* traced by grad, numbers, or sparse (docs/sparse.md): through the ops */
    int mark = I->ntmp;
    if (ta) { a = op_transpose(I, a, sp); tmp_push(I, a); }
    if (tb) { b = op_transpose(I, b, sp); tmp_push(I, b); }
    Value r = op_matmul(I, a, b, sp);
    tmp_release_to(I, mark);
    return r;
  }
  bool fa, fb;                             /* a transposed view (a folded t(X)): X read with */
  Tensor *A = op_gemm_operand(I, a, &fa);  /* the transpose flag, as the eager product reads it */
  tmp_push(I, val_mat(A));                 /* (a packed copy would take another BLAS path and */
  Tensor *B = op_gemm_operand(I, b, &fb);  /* give other last bits) */
  tmp_push(I, val_mat(B));
  Tensor *C = op_gemm_new(I, ta != fa, tb != fb, A, B, sp);
  tmp_pop(I, 2);
  tensor_free_ref(B);
  tensor_free_ref(A);
  return val_mat(C);
}

/* A fusion group's ops one at a time (a traced input, or --nan-check). */
static Value fused_unfused(Interp *I, const GNode *nd, const Value *args) {
  const FusedProg *p = nd->fused;
  int mark = I->ntmp;
  List *hold = list_new(I, p->nregs);     /* the registers: inputs, then each op's result (held */
  tmp_push(I, val_list(hold));            /* on the temporaries: an error frees them) */
  for (int k = 0; k < p->nin; k++) { val_retain(args[k]); list_push(hold, args[k], NULL); }
  Value last = val_null();
  for (int q = 0; q < p->nins; q++) {      /* each op at its own place (an error, --nan-check) */
    const FusedIns *in = &p->ins[q];
    Span sp = nd->fspan ? nd->fspan[q] : nd->span;
    if (nd->fsrc && nd->fsrc[q]) I->src = nd->fsrc[q];
    Value v = in->b >= 0 ? op_binary(I, (OpKind)in->op, hold->items[in->a], hold->items[in->b], sp)
                         : op_unary(I, (OpKind)in->op, hold->items[in->a], sp);
    list_push(hold, v, NULL);             /* (register in->dst == nin + q) */
    last = v;
  }
  if (nd->fsrc && nd->fsrc[p->nins]) I->src = nd->fsrc[p->nins];
  Value res = p->red != OP_NONE ? op_reduce(I, p->red, last, nd->fspan ? nd->fspan[p->nins] : nd->span)
                               : (val_retain(last), last);
  if (nd->src) I->src = nd->src;
  tmp_release_to(I, mark);
  return res;
}

/* Is v the operand the kernel was made for: its shape as traced? A builtin's result can take
** another shape on a later run (seq(0, n - 2) as n changes), and the kernel would read past it. */
static bool fused_fits(const FusedProg *p, int k, Value v) {
  if (v.t == VT_NUM || v.t == VT_BOOL) return p->bc[k] == BC_SCALAR;
  if (v.t != VT_MAT) return false;
  int64_t r = tensor_rows(v.u.m), c = tensor_cols(v.u.m);
  switch (p->bc[k]) {
  case BC_FULL: return r == p->rows && c == p->cols;
  case BC_SCALAR: return r == 1 && c == 1;
  case BC_ROW: return r == 1 && c == p->cols;
  case BC_COL: return r == p->rows && c == 1;
  }
  return false;
}

static Value run_fused_prog(Interp *I, const GNode *nd, const Value *args, Tensor *prod);

/* A group with the GEMM epilogue (FusedProg.mm): the product op(A) op(B) through the ordinary
** product path (a GEMM on this device; a sparse or traced operand through its ops), then the
** program with it as register 0. On the CPU the program overwrites the product (nothing else
** holds it), so the epilogue costs no matrix of its own. */
static Value run_fused_mm(Interp *I, const GNode *nd, const Value *args) {
  const FusedProg *p = nd->fused;
  int mark = I->ntmp;
  Span sp = nd->fspan ? nd->fspan[p->nins + 1] : nd->span;
  if (nd->fsrc && nd->fsrc[p->nins + 1]) I->src = nd->fsrc[p->nins + 1];
  Value prod = (p->mm_ta || p->mm_tb) ? matmul_flags(I, args[0], p->mm_ta, args[1], p->mm_tb, sp)
                                      : op_matmul(I, args[0], args[1], sp);
  if (nd->src) I->src = nd->src;
  tmp_push(I, prod);
  Value pa[64];                            /* registers: the product, then the rest (nin <= 15) */
  MLS_ASSERT(p->nin <= 64);
  pa[0] = prod;
  for (int k = 1; k < p->nin; k++) pa[k] = args[k + 1];
  bool own = prod.t == VT_MAT && prod.u.m->refcount == 1 && prod.u.m->st->refcount == 1 && !prod.u.m->st->sparse &&
             be_is_cpu(prod.u.m->st->be) && p->red == OP_NONE && tensor_is_contiguous(prod.u.m);
  Value r = run_fused_prog(I, nd, pa, own ? prod.u.m : NULL);
  tmp_release_to(I, mark);
  return r;
}

static Value run_fused(Interp *I, const GNode *nd, const Value *args) {
  if (nd->fused->mm) return run_fused_mm(I, nd, args);
  return run_fused_prog(I, nd, args, NULL);
}

/* The program on its registers args; prod (or NULL): register 0's matrix, which the result may
** overwrite (the GEMM epilogue's product, held by nothing else). */
static Value run_fused_prog(Interp *I, const GNode *nd, const Value *args, Tensor *prod) {
  const FusedProg *p = nd->fused;
  bool plain = !I->nan_check;
  for (int k = 0; k < p->nin && plain; k++)       /* a sparse input: op by op, each op's sparse kernel */
    plain = fused_fits(p, k, args[k]) && !(args[k].t == VT_MAT && args[k].u.m->st->sparse);
  if (!plain) return fused_unfused(I, nd, args);   /* op by op, as eager: the same result or error */
  int mark = I->ntmp;
  Tensor *in[64];
  double sc[64];
  for (int k = 0; k < p->nin; k++) {
    in[k] = NULL;
    sc[k] = 0;
    if (args[k].t == VT_MAT) {
      in[k] = tensor_contiguous(I, args[k].u.m);
      tmp_push(I, val_mat(in[k]));
    } else {
      sc[k] = args[k].t == VT_NUM ? args[k].u.n : args[k].u.b;
    }
  }
  op_align_devices(I, in, p->nin);           /* a small CPU matrix joins GPU inputs */
  const Backend *be = be_place(I->cpu, I->device, in, p->nin);  /* where the inputs live (mixed: the CPU) */
  if (!be->run_fused) {
    tmp_release_to(I, mark);
    return fused_unfused(I, nd, args);
  }
  Tensor *out = p->red == OP_SUM ? tensor_new_on(I, be, 1, 1)
              : p->red != OP_NONE && !fused_row_map(p->red) ? tensor_new_on(I, be, p->rows, 1)   /* a row aggregate */
              : prod && in[0] == prod && be_is_cpu(be) ? (prod->refcount++, prod)   /* in place */
                                  : tensor_new_on(I, be, p->rows, p->cols);
  I->kernel_runs++;
  if (be->run_fused(be, p, out, in, sc) != 0) {
    tensor_free_ref(out);
    tmp_release_to(I, mark);
    return fused_unfused(I, nd, args);
  }
  tmp_release_to(I, mark);
  if (I->interrupted) { tensor_free_ref(out); interp_check_interrupt(I, nd->span); }   /* stopped early */
  if (p->red == OP_SUM) {
    if (I->dev_scalars && out->st->dev) return val_mat(out);        /* (replay.c) */
    double s = tensor_data(out)[0];
    tensor_free_ref(out);
    return val_num(s);
  }
  return val_mat(out);
}

static Value build_out(Interp *I, const GOut *o, Value *vals) {
  if (o->node >= 0) { val_retain(vals[o->node]); return vals[o->node]; }
  if (o->node == -1) { val_retain(o->v); return o->v; }
  List *l = list_new(I, o->n > 0 ? o->n : 1);
  l->multi = o->multi;
  Value r = val_list(l);
  tmp_push(I, r);
  for (int i = 0; i < o->n; i++) list_push(l, build_out(I, &o->kids[i], vals), o->names ? o->names[i] : NULL);
  tmp_pop(I, 1);
  return r;
}

Env *graph_env(Interp *I, int32_t depth) {
  Env *e = I->env;
  for (int32_t d = 0; d < depth && e; d++) e = e->parent;
  return e;
}

Value *graph_place(Interp *I, Value *p, int32_t depth, int32_t slot) {
  if (slot < 0) return p;
  Env *e = graph_env(I, depth);
  return e && slot < e->n ? &e->slots[slot] : NULL;
}

bool graph_guards_hold(Interp *I, const Graph *g) {
  for (int i = 0; i < g->nfg; i++) {
    const struct FnGuard *q = &g->fg[i];
    Value *at = g->relative ? graph_place(I, q->place, q->depth, q->slot) : q->place;
    if (q->t == VT_UNBOUND) {                  /* a local slot that must still be unbound */
      if (at && at->t != VT_UNBOUND) return false;
      continue;
    }
    if (!at) return false;                     /* the same type (NULL: still NULL), the same function */
    Value now = *at;
    if (now.t != q->t || (now.t == VT_BUILTIN && (const void *)now.u.bi != q->bi) ||
        (now.t == VT_FUNC && now.u.f->serial != q->serial))
      return false;
  }
  return true;
}

Value graph_run(Interp *I, Graph *g, const Value *leaves, bool *stale) {
  Value r;
  if (!(I->stage && I->stage->active) && graph_replay(I, g, leaves, stale, &r)) return r;
  return graph_run_nodes(I, g, leaves, NULL, stale);
}

/* Do the variables g captures still have their traced types and shapes? False: report's
** stale_why names the first that does not. */
static bool captures_hold(Interp *I, const Graph *g, Graph *report) {
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->kind != GN_CAPTURE) continue;
    Value *at = g->relative ? graph_place(I, nd->place, nd->pdepth, nd->pslot) : nd->place;
    if (!at || !same_shape(nd, *at)) {
      char d[64] = "unbound";
      if (at) val_describe(ad_primal(*at), d, sizeof d);
      snprintf(report->stale_why, sizeof report->stale_why, "the captured variable '%s' is now %s", nd->sym ? nd->sym->name : "?", d);
      return false;
    }
  }
  return true;
}

/* Do the variables the bodies and conditions of g's loop nodes capture (at any depth) still
** have their traced types and shapes (and do their guards hold, checked before their captures
** are read)? A body checks its captures when it runs, but that is after
** the nodes before the loop, whose effects (a print) a stale run would then run twice: the
** block is traced again and run from its start (a fuzz_prog case: a variable read in a while
** loop's body changed type between two runs of its block). False: g->stale_why says which. */
static bool loop_captures_hold(Interp *I, Graph *g) {
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if ((nd->flags & GF_DEAD) || nd->kind != GN_LOOP || !nd->loop) continue;
    Graph *sub[2] = { nd->loop->body, nd->loop->cond };
    for (int k = 0; k < 2; k++) {
      Graph *b = sub[k];
      if (!b) continue;
      if (!graph_guards_hold(I, b)) {   /* first: a capture may be in a freed closure's frame */
        snprintf(g->stale_why, sizeof g->stale_why, "a function a loop's body inlined was redefined");
        return false;
      }
      if (!captures_hold(I, b, b) || !loop_captures_hold(I, b)) {   /* (b says why) */
        snprintf(g->stale_why, sizeof g->stale_why, "%s", b->stale_why);
        return false;
      }
    }
  }
  return true;
}

/* graph_run_nodes's work. hold: NULL, or the caller's list for the node values (at least g->n
** items, NULL, on the temp stack: a loop's runs reuse it); outv: NULL, or where the result's
** items go (g->out a list of nodes; owned), instead of a list made for them. */
static Value run_nodes(Interp *I, Graph *g, const Value *leaves, const Value *capv, bool *stale, List *hold, Value *outv,
                       bool fixed) {
  *stale = false;
  const InlineChain *saved_chain = I->gchain;
  int saved_at = I->gchain_at;
  const ChainLink *saved_up = I->gchain_up;
  ChainLink link = { saved_chain, saved_up };       /* a loop node's body: its nodes' chains go on */
  bool nested = (saved_chain || saved_up) && saved_at == I->nframes;   /* from the loop node's */
  int mark = I->ntmp;
  if (!hold) {
    hold = list_held_nulls(I, g->n);                     /* node values: released on a throw */
  }
  hold->n = g->n;
  Value *vals = hold->items;
  double small[64], *rem = small;                        /* uses left (a loop body's: on the stack) */
  if (g->n > 64) {
    Tensor *rt = tensor_new_on(I, I->cpu, 1, g->n);     /* (held: freed on a throw) */
    tmp_push(I, val_mat(rt));
    rem = tensor_data(rt);
  }
  for (int i = 0; i < g->n; i++) rem[i] = g->nodes[i].uses;
  Source *saved_src = I->src;
  Value args[64];
  bool effects = false;                      /* has an effect run? then the run cannot be dropped */
  if (!graph_guards_hold(I, g)) {                               /* guards first: no effect has run yet */
    snprintf(g->stale_why, sizeof g->stale_why, "a function it inlined was redefined, a NULL it read was set, or a name now means a local");
    *stale = true;
    goto done;
  }
  /* run inside another trace (a jit function called in a block): its guards are that trace's too,
  ** or the trace's replays would go on with a redefined function's inlined body, or read a name
  ** through a local since bound (found by gen_diff --grad and --scope) */
  if (I->stage && I->stage->active && I->stage->graph && I->stage->graph != g) stage_take_guards(I, g);
  /* its captures and its loop nodes' (fixed: capv holds values read earlier) */
  if (!fixed && (!captures_hold(I, g, g) || !loop_captures_hold(I, g))) {
    *stale = true;
    goto done;
  }
  I->gchain_at = I->nframes;
  if (nested) I->gchain_up = &link;
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_DEAD) continue;
    int nin = nd->nin < 64 ? nd->nin : 64;
    I->gchain = nd->chain >= 0 ? &g->chains[nd->chain] : NULL;
    for (int k = 0; k < nin; k++) args[k] = vals[nd->in[k]];
    if (nd->src) I->src = nd->src;
    Value r = val_null();
    switch ((GKind)nd->kind) {
    case GN_PARAM: r = leaves[nd->param]; val_retain(r); break;
    case GN_CAPTURE:
      r = capv ? capv[i] : *(g->relative ? graph_place(I, nd->place, nd->pdepth, nd->pslot) : nd->place);
      if (!same_shape(nd, r)) { *stale = true; goto done; }
      if (!capv && I->stage && I->stage->active) {  /* run while another graph is traced (a jit */
        Value *at = nd->place;                      /* call in a block): a capture of that one too */
        Env *env = nd->penv;
        if (g->relative && nd->pslot >= 0) {
          env = I->env;
          for (int32_t d = 0; d < nd->pdepth && env; d++) env = env->parent;
          at = &env->slots[nd->pslot];
        }
        r = stage_read(I, at, env, nd->sym, nd->span);
        break;
      }
      val_retain(r);
      break;
    case GN_CONST: r = nd->v; val_retain(r); break;
    case GN_OP: {
      if (nin == 2 && args[0].t == VT_NUM && args[1].t == VT_NUM && (op_info[nd->op].flags & OPF_EW) && !I->stage) {
        double x = sc_binary(nd->op, args[0].u.n, args[1].u.n);   /* two numbers: as eval_binary does */
        if (!isfinite(x) && I->nan_check && isfinite(args[0].u.n) && isfinite(args[1].u.n))
          nan_check_fail(I, op_info[nd->op].sym, nd->span);
        r = (op_info[nd->op].flags & OPF_CMP) && x == x ? val_bool(x != 0) : val_num(x);
        break;
      }
      bool last = true;                      /* lend dying temporaries to elementwise ops */
      for (int k = 0; k < nin; k++) last = last && rem[nd->in[k]] == 1;
      if ((nd->flags & (GF_TA | GF_TB)) && nd->op == OP_MATMUL) {
        r = matmul_flags(I, args[0], nd->flags & GF_TA, args[1], nd->flags & GF_TB, nd->span);
        break;
      }
      if (nd->op == OP_MMCHAIN) { r = op_mmchain(I, nin, args, nd->v, nd->span); break; }   /* (its plan in v) */
      if (nd->op == OP_MASKED) { r = run_masked(I, nin, args, nd->v, nd->span); break; }    /* (its program in v) */
      r = op_apply_lent(I, (OpKind)nd->op, last && (op_info[nd->op].flags & OPF_EW), nin - nd->nextra, args, nd->nextra,
                        args + (nin - nd->nextra), nd->span);
      break;
    }
    case GN_CALL: r = bi_call(I, nd->bi, nin, args, nd->names, nd->span); break;
    case GN_FUSED: {                         /* (out of memory for its result: located at the group, */
      Span saved_call = I->call_span;        /* as op_apply locates an op's) */
      I->call_span = nd->span;
      r = run_fused(I, nd, args);
      I->call_span = saved_call;
      break;
    }
    case GN_LOOP:
      r = loop_run(I, nd, args, stale);
      if (*stale) {
        snprintf(g->stale_why, sizeof g->stale_why, "%s", nd->loop->cond && nd->loop->cond->stale_why[0] ? nd->loop->cond->stale_why
                                                                                                  : nd->loop->body->stale_why);
        goto done;
      }
      break;
    case GN_RLOOP:
      r = loop_reverse_run(I, g, nd, args, stale);
      if (*stale) goto done;
      break;
    case GN_ITEM: {                          /* item k of a loop's result; the last: its iterations */
      const Loop *lp = g->nodes[nd->in[0]].loop;
      const List *l = args[0].u.l;
      if (g->nodes[nd->in[0]].kind == GN_RLOOP) {   /* an adjoint sum */
        r = l->items[nd->param];
        val_retain(r);
        break;
      }
      if (nd->param < lp->ncarry && lp->temp[nd->param] && l->items[lp->ncarry].u.n == 0) {   /* a variable the loop never set */
        if (!effects) {                      /* traced again: this run's trace reads it as eager code does */
          snprintf(g->stale_why, sizeof g->stale_why, "a loop ran no iteration, so '%s' is not set", lp->names[nd->param]->name);
          *stale = true;
          goto done;
        }
        mls_throw(I, lp->span, "object '%s' not found (the loop ran no iteration: its body assigns it)", lp->names[nd->param]->name);
      }
      r = l->items[nd->param];
      val_retain(r);
      break;
    }
    }
    if ((nd->kind == GN_OP || nd->kind == GN_CALL) && !effects && !(nd->flags & GF_EFFECT) && !as_traced(I, nd, r)) {
      val_release(r);                        /* another shape than traced (seq(1, n), X[1:n, ]): the */
      *stale = true;                         /* kernels and rewrites after it assumed the old one; */
      snprintf(g->stale_why, sizeof g->stale_why, "'%s' gave another shape than traced",   /* traced again */
               nd->kind == GN_CALL ? nd->bi->name : op_info[nd->op].sym);
      goto done;                             /* (stage.c marks eager where effects ran) */
    }
    vals[i] = r;
    effects = effects || (nd->flags & GF_EFFECT);
    for (int k = 0; k < nin; k++) {          /* memory plan: free a value after its last use */
      int32_t s = nd->in[k];
      if (--rem[s] == 0) { Value d = vals[s]; vals[s] = val_null(); val_release(d); }
    }
  }
done:
  I->gchain = saved_chain;
  I->gchain_at = saved_at;
  I->gchain_up = saved_up;
  I->src = saved_src;
  Value res = val_unbound();
  if (!*stale && outv) {
    for (int k = 0; k < g->out.n; k++) outv[k] = build_out(I, &g->out.kids[k], vals);
    res = val_null();
  } else if (!*stale) {
    res = build_out(I, &g->out, vals);
  }
  for (int i = 0; i < g->n; i++) {               /* (a caller's list: emptied for its next run) */
    Value d = vals[i];
    vals[i] = val_null();
    val_release(d);
  }
  tmp_release_to(I, mark);
  return res;
}

Value graph_run_nodes(Interp *I, Graph *g, const Value *leaves, const Value *capv, bool *stale) {
  return run_nodes(I, g, leaves, capv, stale, NULL, NULL, false);
}

Value graph_run_into(Interp *I, Graph *g, const Value *leaves, bool *stale, List *hold, Value *outv) {
  return run_nodes(I, g, leaves, NULL, stale, hold, outv, false);
}

Value graph_run_fixed(Interp *I, Graph *g, const Value *leaves, const Value *capv, bool *stale, List *hold, Value *outv) {
  return run_nodes(I, g, leaves, capv, stale, hold, outv, true);
}
