/*
** replay.c — a staged graph run as one captured device launch (CUDA graphs; docs/gpu.md).
**
** A graph's first run is plain (graph_run_nodes: fused kernels compiled, the memory cache
** warm); its second run too, but with numbers kept on the device as a capture keeps them
** (below), so that every kernel a capture launches is compiled. Its third run, when every
** matrix it reads lives on a device that can capture (Backend.capture_begin) and none of its
** nodes needs the host (no builtin calls, no effects), is captured: the inputs are first copied into matrices of
** the graph's own, then the nodes run while the device records their kernels instead of
** running them, and the recording is launched once. Every later run copies its inputs into
** those matrices, launches the recording, and copies the results out (a launch rewrites
** them). A reduction to a number stays on the device while capturing (a 1x1 matrix, which
** the ops after it broadcast as they would the number), and is read after the launch. So a
** staged training step costs one graph launch and a copy per input and result,
** whatever its number of ops.
**
** A recording bakes in what its kernels were given: addresses (hence the input matrices of
** its own, and the backend keeping every buffer the capture allocated) and numbers (a run
** whose numbers differ from the captured ones runs plain). A capture that something broke (a
** read on the host, a copy from host memory) is dropped, nothing of it having run: the run is
** made plain, and the graph is never captured again. Nor is a graph whose copies would cost
** more than the launches it saves (worth_it). MLS_REPLAY=0 turns capture off, MLS_REPLAY=2
** captures whatever can be (tests); MLS_REPLAY_LOG=1 prints each decision to standard error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "mem.h"
#include "staging/graph.h"
#include "tensor.h"

struct Replay {
  const Backend *be;
  void *h;                 /* the backend's recording */
  int32_t nleaf;
  Value *leafv;            /* per argument leaf: the matrix of our own (owned) or the number captured */
  Value *capv;             /* per node: for GN_CAPTURE, the same; else NULL */
  Value out;               /* the captured run's result: its matrices are what each launch rewrites */
  int32_t n;               /* the graph's nodes (capv's length) */
};

/* I->replay_mode: 1 on (MLS_REPLAY unset or 1; 0: off); 2 log (MLS_REPLAY_LOG); 4 capture even
** when the copies cost more than the launches saved (MLS_REPLAY=2, for tests); -1: not read yet */
void graph_replay_mode(Interp *I, int m) { I->replay_mode = m; }

static void say(const Interp *I, const Graph *g, const char *what) {
  if (I->replay_mode & 2) fprintf(stderr, "mls: staged graph of %d nodes: %s\n", (int)g->n, what);
}

static bool capturable(const Graph *g, const char **why) {
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_DEAD) continue;
    if (nd->kind == GN_CALL || (nd->flags & GF_EFFECT)) { *why = "a builtin call or an effect runs on the host"; return false; }
    if (nd->kind == GN_LOOP || nd->kind == GN_RLOOP) { *why = "a loop node runs its body's graph from the host"; return false; }
    if ((nd->kind == GN_OP || nd->kind == GN_FUSED) && nd->vt != VT_MAT && nd->vt != VT_NUM && nd->vt != VT_BOOL) {
      *why = "an op's result is neither a matrix nor a number";
      return false;
    }
  }
  return true;
}

/* A value a recording can take: a plain matrix on be, or a number. be is set by the first matrix. */
static bool usable(Value v, const Backend **be) {
  if (v.t == VT_NUM || v.t == VT_BOOL) return true;
  if (v.t != VT_MAT) return false;
  const Backend *b = v.u.m->st->be;
  if (!b->capture_begin) return false;
  if (*be && *be != b) return false;
  *be = b;
  return true;
}

/* Does v fit what the recording took (ours): the same shape, or the same number? */
static bool fits(Value v, Value ours, const Backend *be) {
  if (v.t != ours.t) return false;
  if (v.t == VT_NUM) return memcmp(&v.u.n, &ours.u.n, sizeof v.u.n) == 0;
  if (v.t == VT_BOOL) return v.u.b == ours.u.b;
  const Tensor *a = v.u.m, *b = ours.u.m;
  return a->st->be == be && tensor_rows(a) == tensor_rows(b) && tensor_cols(a) == tensor_cols(b);
}

static Value *capture_place(Interp *I, const Graph *g, const GNode *nd) {
  return g->relative ? graph_place(I, nd->place, nd->pdepth, nd->pslot) : nd->place;
}

static void replay_drop(void *p) {
  Replay *R = p;
  if (!R) return;
  int32_t n = R->n;
  if (R->h) R->be->replay_free(R->be, R->h);
  val_release(R->out);
  for (int32_t k = 0; k < R->nleaf; k++) val_release(R->leafv[k]);
  for (int32_t i = 0; R->capv && i < n; i++) val_release(R->capv[i]);
  mem_free(R->leafv);
  mem_free(R->capv);
  mem_free(R);
}

void graph_replay_free(Graph *g) {
  replay_drop(g->rep);
  g->rep = NULL;
}

/* A copy of the captured result (o describes it) whose matrices are new: the next launch
** rewrites ours. A number the capture kept on the device as a 1x1 matrix (I->dev_scalars) is
** read now, after the launch: a number again. */
static Value copy_out(Interp *I, const Graph *g, const GOut *o, Value v, bool clone) {
  if (o->node == -2 && v.t == VT_LIST && v.u.l->n == o->n) {
    List *src = v.u.l, *l = list_new(I, src->n > 0 ? src->n : 1);
    l->multi = src->multi;
    Value r = val_list(l);
    tmp_push(I, r);
    for (int32_t i = 0; i < src->n; i++) list_push(l, copy_out(I, g, &o->kids[i], src->items[i], clone), src->names ? src->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  if (v.t == VT_MAT && o->node >= 0 && g->nodes[o->node].vt != VT_MAT && tensor_numel(v.u.m) == 1) {
    double d = tensor_data(v.u.m)[0];
    return g->nodes[o->node].vt == VT_BOOL ? val_bool(d != 0) : val_num(d);
  }
  if (v.t == VT_MAT && clone) return val_mat(tensor_clone(I, v.u.m));
  val_retain(v);
  return v;
}

/* Copies v into ours (a matrix of the recording's) on the device. */
static void refresh(Interp *I, Value v, Value ours, Span sp) {
  if (v.t != VT_MAT) return;
  const Backend *be = ours.u.m->st->be;
  if (be->copy2d(be, ours.u.m, v.u.m) != 0)
    mls_throw(I, sp, "copying an input of a captured graph failed on the %s backend: %s", be->name,
              be->error ? be->error(be) : "unknown error");
}

typedef struct CapJob { Graph *g; const Value *leaves; const Value *capv; bool stale; Value r; } CapJob;

static void cap_job(Interp *I, void *ud) {
  CapJob *j = ud;
  I->dev_scalars = true;
  j->r = graph_run_nodes(I, j->g, j->leaves, j->capv, &j->stale);
  I->dev_scalars = false;
}

static Span graph_span(const Graph *g) {
  for (int i = 0; i < g->n; i++)
    if (g->nodes[i].kind == GN_OP || g->nodes[i].kind == GN_FUSED) return g->nodes[i].span;
  return g->n ? g->nodes[0].span : (Span){ 0, 0 };
}

/* The run's inputs into R (after fits() said yes for each), then one launch, then the result. */
static Value launch(Interp *I, Graph *g, const Value *leaves) {
  Replay *R = g->rep;
  Span sp = graph_span(g);
  for (int32_t k = 0; k < R->nleaf; k++) refresh(I, leaves[k], R->leafv[k], sp);
  for (int32_t i = 0; i < g->n; i++)
    if (R->capv[i].t == VT_MAT) refresh(I, *capture_place(I, g, &g->nodes[i]), R->capv[i], sp);
  I->kernel_runs++;
  if (R->be->replay(R->be, R->h) != 0)
    mls_throw(I, sp, "launching a captured graph failed on the %s backend: %s", R->be->name,
              R->be->error ? R->be->error(R->be) : "unknown error");
  return copy_out(I, g, &g->out, R->out, true);
}

/* Do this run's inputs fit the recording? (Places that are gone: no; the plain run says stale.
** The guards hold: graph_replay checked them.) */
static bool run_fits(Interp *I, Graph *g, const Value *leaves) {
  Replay *R = g->rep;
  for (int32_t k = 0; k < R->nleaf; k++)
    if (!fits(leaves[k], R->leafv[k], R->be)) return false;
  for (int32_t i = 0; i < g->n; i++) {
    if (g->nodes[i].kind != GN_CAPTURE || (g->nodes[i].flags & GF_DEAD)) continue;
    Value *at = capture_place(I, g, &g->nodes[i]);
    if (!at || !fits(*at, R->capv[i], R->be)) return false;
  }
  return true;
}

/* Our copy of an input value: a new matrix on the device for a matrix, else the value. */
static Value own_copy(Interp *I, Value v) {
  if (v.t == VT_MAT) return val_mat(tensor_clone(I, v.u.m));
  return v;
}

/* The device of this run's matrices when a recording could take them all, else NULL. */
static const Backend *run_device(Interp *I, Graph *g, const Value *leaves) {
  const Backend *be = NULL;
  for (int32_t k = 0; k < g->nparams; k++)
    if (!usable(leaves[k], &be)) return NULL;
  for (int32_t i = 0; i < g->n; i++) {
    if (g->nodes[i].kind != GN_CAPTURE || (g->nodes[i].flags & GF_DEAD)) continue;
    Value *at = capture_place(I, g, &g->nodes[i]);
    if (!at || !usable(*at, &be)) return NULL;
  }
  return be;
}

/* Is a capture worth its copies? Each call copies the matrices it reads into the recording's
** and the results out of it: about bytes / 1.5 TB/s (a read and a write at an H100's ~3 TB/s)
** plus a launch each, against the ~4 us of launch and queueing each op costs uncaptured. A
** chain over a 1e7-element matrix (one fused kernel, 160 MB to copy) is not worth it; a
** training step of small matrices is. */
static bool worth_it(Interp *I, const Graph *g, const Value *leaves, double *mb) {
  double bytes = 0;
  int ops = 0, copies = 0;
  for (int32_t k = 0; k < g->nparams; k++)
    if (leaves[k].t == VT_MAT) { bytes += 8.0 * (double)tensor_numel(leaves[k].u.m); copies++; }
  for (int32_t i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_DEAD) continue;
    if (nd->kind == GN_OP || nd->kind == GN_FUSED) ops++;
    if (nd->kind == GN_CAPTURE) {
      Value *at = capture_place(I, g, nd);
      if (at && at->t == VT_MAT) { bytes += 8.0 * (double)tensor_numel(at->u.m); copies++; }
    }
  }
  for (int32_t k = 0; k < g->nout; k++) {
    const GNode *nd = &g->nodes[g->outs[k]];
    if (nd->vt == VT_MAT) { bytes += 8.0 * (double)nd->rows * (double)nd->cols; copies++; }
  }
  *mb = bytes / 1048576.0;
  return bytes / 1.5e12 + (copies + 1) * 3e-6 < ops * 4e-6;
}

/* The second run: plain, but with the reductions to numbers kept on the device as a capture
** keeps them, so that every kernel the capture will launch (a fusion group reading a 1x1
** matrix where the first run had a number is another program) is compiled before it: a
** capture should not load modules. An error here (an op that takes no 1x1 matrix for a
** number) means the graph is never captured, and the run is made plainly. */
static bool warm_run(Interp *I, Graph *g, const Value *leaves, bool *stale, Value *res) {
  CapJob j = { g, leaves, NULL, false, val_null() };
  int mark = I->ntmp;
  int err = mls_pcall(I, cap_job, &j);
  I->dev_scalars = false;
  if (err || j.stale) {
    tmp_release_to(I, mark);
    val_release(j.r);
    if (err && I->interrupted) mls_rethrow(I);             /* Ctrl-C: not the graph's fault */
    if (err) {
      g->repok = -1;
      if (I->replay_mode & 2) {
        char line[320];
        snprintf(line, sizeof line, "not captured: an error with numbers kept on the device: %.200s", I->err.msg);
        say(I, g, line);
      }
    }
    return false;
  }
  tmp_push(I, j.r);
  *res = copy_out(I, g, &g->out, j.r, false);
  tmp_release_to(I, mark);
  *stale = false;
  return true;
}

/* Tries to capture this run; true with *res set when it did (and launched it). */
static bool capture(Interp *I, Graph *g, const Value *leaves, bool *stale, Value *res) {
  const Backend *be = run_device(I, g, leaves);
  if (!be) return false;                                  /* (this run only: plain) */
  int mark = I->ntmp;
  Replay *R = mem_calloc(1, sizeof *R);
  R->be = be;
  R->n = g->n;
  R->nleaf = g->nparams;
  R->leafv = mem_calloc((size_t)(g->nparams > 0 ? g->nparams : 1), sizeof *R->leafv);
  R->capv = mem_calloc((size_t)(g->n > 0 ? g->n : 1), sizeof *R->capv);
  R->out = val_null();
  for (int32_t k = 0; k < R->nleaf; k++) R->leafv[k] = val_null();
  for (int32_t i = 0; i < g->n; i++) R->capv[i] = val_null();
  mls_defer(I, replay_drop, R);                           /* a copy may throw (out of memory) */
  for (int32_t k = 0; k < R->nleaf; k++) R->leafv[k] = own_copy(I, leaves[k]);
  for (int32_t i = 0; i < g->n; i++)
    if (g->nodes[i].kind == GN_CAPTURE && !(g->nodes[i].flags & GF_DEAD)) R->capv[i] = own_copy(I, *capture_place(I, g, &g->nodes[i]));
  mls_undefer(I, R);
  if (be->capture_begin(be) != 0) {
    replay_drop(R);
    g->repok = -1;
    say(I, g, "not captured: the device could not start a capture");
    return false;
  }
  CapJob j = { g, R->leafv, R->capv, false, val_null() };
  int err = mls_pcall(I, cap_job, &j);
  I->dev_scalars = false;
  char why[160] = "";
  R->h = be->capture_end(be, why, sizeof why);
  tmp_release_to(I, mark);
  if (err || j.stale || !R->h) {                          /* nothing ran: the run is made plain */
    bool broken = !R->h;                                  /* (then what the run saw means nothing) */
    val_release(j.r);
    replay_drop(R);
    if (err && I->interrupted) mls_rethrow(I);             /* Ctrl-C: not the graph's fault */
    if (j.stale && !err && !broken) return false;
    g->repok = -1;
    if (I->replay_mode & 2) {
      char line[256];
      if (err) snprintf(line, sizeof line, "not captured: an error while capturing: %.200s", I->err.msg);
      else snprintf(line, sizeof line, "not captured: %s", why[0] ? why : "the device could not instantiate it");
      say(I, g, line);
    }
    return false;
  }
  R->out = j.r;
  g->rep = R;
  say(I, g, "captured as one device launch");
  *stale = false;
  I->kernel_runs++;
  if (R->be->replay(R->be, R->h) != 0)
    mls_throw(I, graph_span(g), "launching a captured graph failed on the %s backend: %s", be->name,
              be->error ? be->error(be) : "unknown error");
  *res = copy_out(I, g, &g->out, R->out, true);
  return true;
}

bool graph_replay(Interp *I, Graph *g, const Value *leaves, bool *stale, Value *res) {
  if (I->replay_mode < 0) {                              /* (once, or again after graph_replay_mode(I, -1)) */
    const char *e = getenv("MLS_REPLAY"), *l = getenv("MLS_REPLAY_LOG");
    I->replay_mode = (e && *e == '0' ? 0 : 1) | (e && *e == '2' ? 4 : 0) | (l && *l && *l != '0' ? 2 : 0);
  }
  int mode = I->replay_mode;
  /* (while a graph is being staged, its ops give traced values: this run is part of a trace) */
  if (!(mode & 1) || g->repok < 0 || I->nan_check || I->stage) return false;
  /* guards first: a capture's place may be in the frame of a closure since redefined and freed
  ** (its guard fails), which run_fits and run_device would read (the plain run says stale) */
  if (!graph_guards_hold(I, g)) return false;
  if (g->rep) {
    if (!run_fits(I, g, leaves)) return false;
    *stale = false;
    *res = launch(I, g, leaves);
    return true;
  }
  if (g->repok == 0) {
    const char *why = NULL;
    g->repok = capturable(g, &why) ? 1 : -1;
    if (g->repok < 0) {
      if (I->replay_mode & 2) {
        char line[256];
        snprintf(line, sizeof line, "not captured: %s", why);
        say(I, g, line);
      }
      return false;
    }
  }
  if (g->runs == 0) { g->runs++; return false; }        /* the first run is plain */
  if (!run_device(I, g, leaves)) return false;
  double mb = 0;
  if (!worth_it(I, g, leaves, &mb) && !(mode & 4)) {
    g->repok = -1;
    if (I->replay_mode & 2) {
      char line[256];
      snprintf(line, sizeof line, "not captured: copying its %.1f MiB of arguments and results would cost more than the launches it saves", mb);
      say(I, g, line);
    }
    return false;
  }
  if (g->runs++ == 1) return warm_run(I, g, leaves, stale, res);
  return capture(I, g, leaves, stale, res);
}
