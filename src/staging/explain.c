/*
** explain.c — the staged graph as text (explain) and as Graphviz (dot): one line or one box
** per node with its op, inputs, result shape and source line.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "backend/backend.h"
#include "builtins.h"
#include "staging/graph.h"
#include "tensor.h"

static void shape_of(const GNode *nd, char *buf, size_t n) {
  switch (nd->vt) {
  case VT_MAT: snprintf(buf, n, "%lldx%lld", (long long)nd->rows, (long long)nd->cols); break;
  case VT_NUM: snprintf(buf, n, "number"); break;
  case VT_BOOL: snprintf(buf, n, "boolean"); break;
  case VT_STR: snprintf(buf, n, "string"); break;
  case VT_LIST: snprintf(buf, n, "list"); break;
  case VT_NULL: snprintf(buf, n, "NULL"); break;
  default: snprintf(buf, n, "value"); break;
  }
}

static void const_text(const GNode *nd, char *buf, size_t n) {
  Value v = nd->v;
  if (v.t == VT_NUM) snprintf(buf, n, "%.15g", v.u.n);
  else if (v.t == VT_BOOL) snprintf(buf, n, "%s", v.u.b ? "TRUE" : "FALSE");
  else if (v.t == VT_STR) snprintf(buf, n, "\"%.24s%s\"", v.u.s->s, v.u.s->len > 24 ? "..." : "");
  else if (v.t == VT_MAT) snprintf(buf, n, "%lldx%lld matrix", (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
  else if (v.t == VT_NULL) snprintf(buf, n, "NULL");
  else snprintf(buf, n, "%s", val_type_name(v));
}

/* "op" of a node: the op's symbol, the builtin's name, or the fused program. lp: the loop whose
** body or condition the node is in (its parameters are the carried values, the index and the
** enclosing graph's values), or NULL. */
static void node_label(const GNode *nd, char *buf, size_t n, const Loop *lp, const Graph *g) {
  char c[64];
  switch ((GKind)nd->kind) {
  case GN_PARAM:
    if (!lp) snprintf(buf, n, "param %d", nd->param + 1);
    else if (nd->param < lp->ncarry) snprintf(buf, n, "carried %s", lp->names[nd->param]->name);
    else if (nd->param == lp->ncarry) snprintf(buf, n, "index");
    else snprintf(buf, n, "outer %d", nd->param - lp->ncarry);
    break;
  case GN_LOOP:
    if (nd->loop->is_while) snprintf(buf, n, "loop while (%d carried)", nd->loop->ncarry);
    else if (nd->loop->range.on) snprintf(buf, n, "loop for over a staged range (%d carried)", nd->loop->ncarry);
    else snprintf(buf, n, "loop for %lld iterations (%d carried)", (long long)nd->loop->count, nd->loop->ncarry);
    break;
  case GN_RLOOP: {
    const Loop *l = nd->loop;
    int32_t f = -1;                              /* the loop node it reverses */
    for (int32_t i = 0; i < g->n && f < 0; i++)
      if (g->nodes[i].kind == GN_LOOP && g->nodes[i].loop == l && !(g->nodes[i].flags & GF_DEAD)) f = i;
    char of[32] = "its loop";
    if (f >= 0) snprintf(of, sizeof of, "loop %%%d", f);
    if (l->is_while)
      snprintf(buf, n, "reverse of %s: keeps the carried state every k iterations, k doubling from 1 as the loop runs "
               "(at most 3 sqrt(2n) + 1 states), recomputes each segment from its checkpoint and runs it backward", of);
    else if (l->range.on)
      snprintf(buf, n, "reverse of %s: keeps the carried state every ceil(sqrt(n)) iterations of the run's n, recomputes "
               "each segment from its checkpoint and runs it backward", of);
    else {
      long long k = (long long)ceil(sqrt((double)(l->count > 0 ? l->count : 1)));
      snprintf(buf, n, "reverse of %s: keeps the carried state every %lld iterations of %lld, recomputes the %lld segments "
               "from those checkpoints and runs them backward", of, k, (long long)l->count, (long long)((l->count + k - 1) / k));
    }
    break;
  }
  case GN_ITEM: {
    const GNode *src = &g->nodes[nd->in[0]];
    const Loop *l = src->loop;
    if (src->kind == GN_RLOOP && nd->param < l->ncarry) snprintf(buf, n, "adjoint %s", l->names[nd->param]->name);
    else if (src->kind == GN_RLOOP) snprintf(buf, n, "adjoint outer %d", nd->param - l->ncarry + 1);
    else snprintf(buf, n, "item %s", l->names[nd->param]->name);
    break;
  }
  case GN_CAPTURE: snprintf(buf, n, "capture %s", nd->sym ? nd->sym->name : "?"); break;
  case GN_CONST: const_text(nd, c, sizeof c); snprintf(buf, n, "const %s", c); break;
  case GN_OP:
    snprintf(buf, n, "%s%s%s", op_info[nd->op].sym, nd->flags & GF_TA ? " [t(A)]" : "", nd->flags & GF_TB ? " [t(B)]" : "");
    break;
  case GN_CALL: snprintf(buf, n, "call %s%s", nd->bi->name, nd->flags & GF_EFFECT ? " (effect)" : ""); break;
  case GN_FUSED: {
    const FusedProg *p = nd->fused;
    size_t k = (size_t)snprintf(buf, n, "fused[");
    if (p->mm)                                   /* the GEMM epilogue: the product first */
      k += (size_t)snprintf(buf + k, n - k, "%%*%%%s%s%s", p->mm_ta ? " [t(A)]" : "", p->mm_tb ? " [t(B)]" : "",
                            p->nins ? " " : "");
    for (int q = 0; q < p->nins && k + 8 < n; q++)
      k += (size_t)snprintf(buf + k, n - k, "%s%s", q ? " " : "", op_info[p->ins[q].op].sym);
    if (k + 8 < n) snprintf(buf + k, n - k, "]%s%s", p->red != OP_NONE ? " -> " : "", p->red != OP_NONE ? op_info[p->red].sym : "");
    break;
  }
  }
}

static void print_graph(Interp *I, const Graph *g, TextBuf *t, int indent, const Loop *lp) {
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_DEAD) continue;
    char lab[320], sh[48];
    node_label(nd, lab, sizeof lab, lp, g);
    shape_of(nd, sh, sizeof sh);
    tb_printf(t, "%*s  %%%d = %s", indent, "", i, lab);
    for (int k = 0; k < nd->nin; k++) tb_printf(t, " %%%d", nd->in[k]);
    tb_printf(t, "  : %s", sh);
    const Backend *be = I->device;              /* --device gpu: ops the GPU has no kernel for */
    bool fallback = false;
    if (be != I->cpu && be->supports_op) {
      if (nd->kind == GN_OP) fallback = !be->supports_op(be, (OpKind)nd->op);
      if (nd->kind == GN_FUSED)
        for (int q = 0; q < nd->fused->nins; q++) fallback = fallback || !be->supports_op(be, (OpKind)nd->fused->ins[q].op);
    }
    if (fallback) tb_printf(t, "  [no %s kernel: runs on the CPU]", be->name);
    if (nd->src && nd->span.end > 0) {
      uint32_t line, col;
      diag_locate(nd->src, nd->span.start, &line, &col);
      tb_printf(t, "  (line %u)", line);
    }
    tb_puts(t, "\n");
    if (nd->kind == GN_LOOP) {                   /* its condition and body, indented */
      if (nd->loop->cond) {
        tb_printf(t, "%*s      condition:\n", indent, "");
        print_graph(I, nd->loop->cond, t, indent + 6, nd->loop);
      }
      tb_printf(t, "%*s      body:\n", indent, "");
      print_graph(I, nd->loop->body, t, indent + 6, nd->loop);
    }
  }
  tb_printf(t, "%*s  results:", indent, "");
  for (int i = 0; i < g->nout; i++) tb_printf(t, " %%%d", g->outs[i]);
  if (g->nout == 0) tb_puts(t, " (none staged)");
  tb_puts(t, "\n");
}

void graph_print(Interp *I, const Graph *g, TextBuf *t) { print_graph(I, g, t, 0, NULL); }

static void dot_escape(TextBuf *t, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') tb_putn(t, "\\", 1);
    tb_putn(t, s, 1);
  }
}

void graph_dot(const Graph *g, TextBuf *t, const char *cluster, const char *prefix) {
  tb_printf(t, "  subgraph cluster_%s {\n    label=\"", prefix);
  dot_escape(t, cluster);
  tb_printf(t, " (%d nodes)\";\n", g->after ? g->after : g->before);
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_DEAD) continue;
    char lab[320], sh[48];
    node_label(nd, lab, sizeof lab, NULL, g);
    shape_of(nd, sh, sizeof sh);
    const char *shape = nd->kind == GN_PARAM || nd->kind == GN_CAPTURE ? "invhouse"
                      : nd->kind == GN_CONST                         ? "plaintext"
                      : nd->kind == GN_FUSED                         ? "box3d"
                      : nd->flags & GF_EFFECT                        ? "octagon"
                                                                     : "box";
    tb_printf(t, "    %s%d [shape=%s, label=\"", prefix, i, shape);
    dot_escape(t, lab);
    tb_puts(t, "\\n");
    dot_escape(t, sh);
    tb_puts(t, "\"];\n");
  }
  for (int i = 0; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_DEAD) continue;
    for (int k = 0; k < nd->nin; k++) tb_printf(t, "    %s%d -> %s%d;\n", prefix, nd->in[k], prefix, i);
  }
  for (int i = 0; i < g->nout; i++) {
    tb_printf(t, "    %sout%d [shape=doublecircle, label=\"result\"];\n    %s%d -> %sout%d;\n", prefix, i, prefix,
              g->outs[i], prefix, i);
  }
  tb_puts(t, "  }\n");
}
