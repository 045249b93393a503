/*
** eval.c — the eager tree walker. eval() returns an owned Value (+1). Temporaries that must
** survive a call that may throw sit on the temp stack (I->tmp), which mls_pcall unwinds.
** Numbers take an inline fast path; everything else goes through the op entry points of
** ops.c, where the tape and the stager attach.
*/
#include <math.h>
#include <signal.h>
#include <string.h>
#include "autodiff.h"
#include "backend/backend.h"
#include "backend/scalar.h"
#include "builtins.h"
#include "interp/interp.h"
#include "mpi/mpi.h"
#include "mem.h"
#include "ops.h"
#include "ops/index.h"
#include "print.h"
#include "progress.h"
#include "staging/loop.h"
#include "staging/stage.h"
#include "tensor.h"

static Value eval_call(Interp *I, AstNode *n);
static Value eval_call_first(Interp *I, AstNode *n);
static Value eval_index(Interp *I, AstNode *n);
static Value eval_assign(Interp *I, AstNode *n);
static Value eval_binary(Interp *I, AstNode *n);
static Value eval_misc(Interp *I, AstNode *n);

/* ---- variables ---- */
static Value *find_by_name(Interp *I, Env *e, Symbol *sym) {
  for (; e; e = e->parent)
    for (int i = 0; i < e->n; i++)
      if (e->fi->slots[i] == sym && e->slots[i].t != VT_UNBOUND) return &e->slots[i];
  return sym->global.t != VT_UNBOUND ? &sym->global : NULL;
  (void)I;
}

Value *interp_find_name(Interp *I, Symbol *sym) { return find_by_name(I, I->env, sym); }

static inline Env *env_at(Interp *I, int depth) {
  Env *e = I->env;
  while (depth-- > 0) e = e->parent;
  return e;
}

/* The place a name refers to now, or NULL when unbound (falls back outward by name). */
static Value *lookup_place(Interp *I, AstNode *n) {
  if (n->slot < 0) return n->u.sym->global.t != VT_UNBOUND ? &n->u.sym->global : NULL;
  Env *e = env_at(I, n->depth);
  Value *p = &e->slots[n->slot];
  if (p->t != VT_UNBOUND) return p;
  return find_by_name(I, e->parent, n->u.sym);
}

/* A read while staging: the Env holding p decides whether it is a capture (stage.c). */
static Value staged_read(Interp *I, AstNode *n, Value *p) {
  if (n->slot >= 0) {                          /* the local is unbound: read from outside (for now) */
    Env *own = env_at(I, n->depth);
    if (&own->slots[n->slot] != p && own->slots[n->slot].t == VT_UNBOUND) stage_guard_unbound(I, &own->slots[n->slot], own);
  }
  Env *e = NULL;
  if (p != &n->u.sym->global)
    for (e = I->env; e; e = e->parent)
      if (p >= e->slots && p < e->slots + e->n) break;
  return stage_read(I, p, e, n->u.sym, n->span);
}

static Value eval_name(Interp *I, AstNode *n) {
  Value *p = lookup_place(I, n);
  if (p && I->stage) return staged_read(I, n, p);
  if (p) { val_retain(*p); return *p; }
  if (n->u.sym->bi) { Value v; v.t = VT_BUILTIN; v.u.bi = n->u.sym->bi; return v; }
  char nsname[256];                                           /* no variable ns: the namespace ns, */
  Symbol *ns = n->u.sym->len + 2 < sizeof nsname ?           /* a list (ns$f, names(ns)) */
               sym_lookup(&I->syms, nsname, (size_t)snprintf(nsname, sizeof nsname, "%s::", n->u.sym->name)) : NULL;
  Value *q = ns ? find_by_name(I, I->env, ns) : NULL;
  if (q) { val_retain(*q); return *q; }
  Value lf = interp_lib_function(I, n->u.sym, n->span);      /* stdlib/builtin/NAME.mls */
  if (lf.t != VT_UNBOUND) return lf;
  char near[256];
  interp_suggest(I, n->u.sym->name, near, sizeof near);
  mls_throw(I, n->span, "object '%s' not found%s", n->u.sym->name, near);
}

/* Where an assignment to name node n stores (creates the local or global binding). */
static Value *assign_place(Interp *I, AstNode *n) {
  if (n->slot < 0) {
    if (I->stage) stage_assigned(I, &n->u.sym->global, n->u.sym, NULL);
    return &n->u.sym->global;
  }
  Env *e = env_at(I, n->depth);
  if (I->stage) stage_assigned(I, &e->slots[n->slot], n->u.sym, e);
  return &e->slots[n->slot];
}

static void store(Value *place, Value v) {   /* takes v */
  Value old = *place;
  *place = v;
  val_release(old);
}

static Value ev_assign_global(Interp *I, AstNode *n);
/* ---- number evaluators (AstNode.evn): a pure number expression without Values ----
** A tree of number literals and names combined by elementwise ops (the scalar loop's
** `s + i * 0.5`, `i < n`) has no effect but reading its names, so it can be tried as doubles
** and, when a name does not hold a number (a matrix, a box of grad or of a stage, unbound), given
** up and evaluated again by ev, which then meets the same values. The callers (assignments to a
** name, while and if conditions) try it only while no stage traces (staging reads names through
** stage_read). A result that --nan-check would stop at is given up too, so ev reports it. A
** comparison gives 0 or 1 and is read only at the root, where its callers make it a boolean. */
static inline bool evn_name(Interp *I, const AstNode *k, double *x) {
  Value v;
  if (k->slot < 0) v = k->u.sym->global;
  else v = env_at(I, k->depth)->slots[k->slot];   /* (unbound: ev looks outward by name) */
  *x = v.u.n;
  return v.t == VT_NUM;
}

/* A kid of an op: literals and names inline, deeper trees through their own evn. */
static inline bool evn_kid(Interp *I, AstNode *k, double *x) {
  if (k->kind == AST_NUM) { *x = k->u.num; return true; }
  if (k->kind == AST_NAME) return evn_name(I, k, x);
  return k->evn(I, k, x);
}

static bool evn_num(Interp *I, AstNode *n, double *out) { (void)I; *out = n->u.num; return true; }
static bool evn_namef(Interp *I, AstNode *n, double *out) { return evn_name(I, n, out); }

/* An op's evaluator for each kind of its two operands, chosen when the tree is prepared: a
** number (K), a global (G), a local of the running function (L) or anything else with an evn
** (X), so that the usual `s + i * 0.5` reads its leaves without asking what they are. */
static inline bool evn_g(const AstNode *k, double *x) {
  Value v = k->u.sym->global;
  *x = v.u.n;
  return v.t == VT_NUM;
}
static inline bool evn_l(Interp *I, const AstNode *k, double *x) {
  Value v = I->env->slots[k->slot];
  *x = v.u.n;
  return v.t == VT_NUM;
}
#define EVN_K(k, x) (*(x) = (k)->u.num, true)
#define EVN_G(k, x) evn_g(k, x)
#define EVN_L(k, x) evn_l(I, k, x)
#define EVN_X(k, x) (k)->evn(I, k, x)
#define EVN_SPEC(NAME, EXPR, CA, CB)                                                      \
  static bool NAME##_##CA##CB(Interp *I, AstNode *n, double *out) {                       \
    double x, y;                                                                          \
    if (!EVN_##CA(n->kids[0], &x) || !EVN_##CB(n->kids[1], &y)) return false;             \
    double r = (EXPR);                                                                    \
    if (I->nan_check && !isfinite(r) && isfinite(x) && isfinite(y)) return false;         \
    *out = r;                                                                             \
    return true;                                                                          \
  }
#define EVN_ROW(NAME, EXPR, CA) \
  EVN_SPEC(NAME, EXPR, CA, K) EVN_SPEC(NAME, EXPR, CA, G) EVN_SPEC(NAME, EXPR, CA, L) EVN_SPEC(NAME, EXPR, CA, X)
#define EVN_BINARY(NAME, EXPR)                                                            \
  EVN_ROW(NAME, EXPR, K) EVN_ROW(NAME, EXPR, G) EVN_ROW(NAME, EXPR, L) EVN_ROW(NAME, EXPR, X) \
  static EvnFn *const NAME[4][4] = { { NAME##_KK, NAME##_KG, NAME##_KL, NAME##_KX },         \
                                     { NAME##_GK, NAME##_GG, NAME##_GL, NAME##_GX },         \
                                     { NAME##_LK, NAME##_LG, NAME##_LL, NAME##_LX },         \
                                     { NAME##_XK, NAME##_XG, NAME##_XL, NAME##_XX } };
typedef bool EvnFn(Interp *I, AstNode *n, double *out);
EVN_BINARY(evn_add, x + y)
EVN_BINARY(evn_sub, x - y)
EVN_BINARY(evn_mul, x * y)
EVN_BINARY(evn_div, x / y)
EVN_BINARY(evn_lt, x < y)
EVN_BINARY(evn_le, x <= y)
EVN_BINARY(evn_gt, x > y)
EVN_BINARY(evn_ge, x >= y)
EVN_BINARY(evn_eq, x == y)
EVN_BINARY(evn_ne, x != y)
EVN_BINARY(evn_binary, sc_binary(n->op, x, y))
#undef EVN_BINARY
#undef EVN_ROW
#undef EVN_SPEC

/* The operand kind of kid k (the index into the tables above). */
static int evn_class(const AstNode *k) {
  if (k->kind == AST_NUM) return 0;
  if (k->kind == AST_NAME && k->slot < 0) return 1;
  if (k->kind == AST_NAME && k->depth == 0) return 2;
  return 3;
}

static bool evn_unary(Interp *I, AstNode *n, double *out) {   /* as eval_unary's number path */
  double x;
  if (I->nan_check || !evn_kid(I, n->kids[0], &x)) return false;
  *out = sc_unary(n->op, x);
  return true;
}

static bool is_cmp_node(const AstNode *n) {
  return (n->kind == AST_BINARY || n->kind == AST_UNARY) && (op_info[n->op].flags & OPF_CMP);
}

/* n->evn for a node whose kids are prepared: a number, a name, or an elementwise op on
** operands that have one and give numbers (a comparison's 0/1 stays at the root). */
static void evn_prepare(AstNode *n) {
  n->evn = NULL;
  switch (n->kind) {
  case AST_NUM: n->evn = evn_num; return;
  case AST_NAME: if (n->u.sym->len != 3 || strcmp(n->u.sym->name, "...")) n->evn = evn_namef; return;
  case AST_UNARY:
    if (!(op_info[n->op].flags & OPF_EW) || !n->kids[0]->evn || is_cmp_node(n->kids[0])) return;
    n->evn = evn_unary;
    return;
  case AST_BINARY:
    if (!(op_info[n->op].flags & OPF_EW) || n->nkids != 2) return;
    for (int i = 0; i < 2; i++)
      if (!n->kids[i]->evn || is_cmp_node(n->kids[i])) return;
    {
      EvnFn *const (*t)[4];
      switch (n->op) {
      case OP_ADD: t = evn_add; break;
      case OP_SUB: t = evn_sub; break;
      case OP_MUL: t = evn_mul; break;
      case OP_DIV: t = evn_div; break;
      case OP_LT: t = evn_lt; break;
      case OP_LE: t = evn_le; break;
      case OP_GT: t = evn_gt; break;
      case OP_GE: t = evn_ge; break;
      case OP_EQ: t = evn_eq; break;
      case OP_NE: t = evn_ne; break;
      default: t = evn_binary; break;
      }
      n->evn = t[evn_class(n->kids[0])][evn_class(n->kids[1])];
    }
    return;
  default: return;
  }
}

/* The truth of condition c by its number evaluator: false when it has none, a stage traces, a
** name is not a number or the value is NaN (then ev and val_truth decide, with their errors). */
static inline bool evn_truth(Interp *I, AstNode *c, bool *t) {
  double x;
  if (!c->evn || I->stage || !c->evn(I, c, &x) || isnan(x)) return false;
  *t = x != 0;
  return true;
}

/* A comparison's or logical op's number result as its value: a boolean, or NaN (R's NA: NA & TRUE
** is NA) as a number. */
static inline Value logical_value(double x) { return x == x ? val_bool(x != 0) : val_num(x); }

/* name = <pure number expression>: stored without a Value made and checked on the way (the
** place a global's or a local's of the running function; a comparison stores a boolean). */
#define EV_ASSIGN_NUM(NAME, PLACE, MAKE, SLOW)                                \
  static Value NAME(Interp *I, AstNode *n) {                                  \
    AstNode *rhs = n->kids[1];                                                \
    double x;                                                                 \
    if (I->stage || !rhs->evn(I, rhs, &x)) return SLOW(I, n);                 \
    Value *place = (PLACE), old = *place;                                     \
    *place = MAKE(x);                                                         \
    if (val_is_heap(old)) val_release(old);                                   \
    return MAKE(x);                                                           \
  }
EV_ASSIGN_NUM(ev_assign_global_num, &n->kids[0]->u.sym->global, val_num, ev_assign_global)
EV_ASSIGN_NUM(ev_assign_global_bool, &n->kids[0]->u.sym->global, logical_value, ev_assign_global)
EV_ASSIGN_NUM(ev_assign_local0_num, &I->env->slots[n->kids[0]->slot], val_num, eval_assign)
EV_ASSIGN_NUM(ev_assign_local0_bool, &I->env->slots[n->kids[0]->slot], logical_value, eval_assign)
#undef EV_ASSIGN_NUM

/* ---- number loops (AstNode.loop) ----
** A while loop whose test is a pure number expression and whose body is assignments of pure
** number expressions to names (a global, or a local of the running function) is also a flat
** program: three-address instructions over operands that are, when the loop starts, the places
** of its names (a global's binding, a slot of the running env or of an enclosing one), its
** numbers and temporaries (the test, then the body's statements, then LP_END; a test that is a
** comparison is one jump, LP_JLT ..., an if a jump past its then branch, LP_JMP past its else). An
** instruction reads its operands' places as evn does; a statement whose operand does not hold a
** number is given up before it stores anything and run by its ev (which then meets the same
** values: an unbound local is looked up outward, a matrix goes to the ops, a missing name is the
** usual error), and the program goes on after it. Only a statement's last instruction stores
** into its name, so nothing is left half done. The loop polls (fuel, Ctrl-C, an abstract trace's
** stop) after each iteration, as loop_body does. Not used while a stage traces, under
** --nan-check, or where --staged runs blocks staged (eval_while checks). */
enum { LP_ADD, LP_SUB, LP_MUL, LP_DIV, LP_LT, LP_LE, LP_GT, LP_GE, LP_EQ, LP_NE, LP_BIN,   /* d = a op b */
       LP_UN, LP_MOV, LP_MOVB,        /* d = op a, d = a, d = a as a boolean */
       LP_TEST, LP_JF, LP_JMP,        /* stop unless a is true; jump to jmp unless a is true; jump */
       LP_JLT, LP_JLE, LP_JGT, LP_JGE, LP_JEQ, LP_JNE,   /* jump to jmp unless a op b (ORDER LP_LT) */
       LP_END, LP_EXIT };             /* the iteration's end; the loop's */
enum { LP_CONST, LP_GLOBAL, LP_LOCAL, LP_TEMP };
enum { LP_MAXOPS = 255, LP_MAXINS = 255, LP_MAXSTMT = 64 };
typedef struct LpIns { uint8_t code, op, stmt, a, b, dst, jmp; } LpIns;   /* op: LP_BIN's, LP_UN's OpKind */
typedef struct LpOpnd { uint8_t kind; int32_t slot, depth; Symbol *sym; double k; } LpOpnd;
/* A statement: an assignment, the loop's test or an if's test (node: the if; alt: its else). */
enum { LPS_ASSIGN, LPS_TEST, LPS_IF };
typedef struct LpStmt { uint16_t end, alt; uint8_t kind; AstNode *node; } LpStmt;   /* end: what follows */
struct NumLoop { int nops, nins; LpOpnd *ops; LpIns *ins; LpStmt *stmts; };

typedef struct LpBuild {
  LpOpnd op[LP_MAXOPS];
  LpIns ins[LP_MAXINS];
  LpStmt st[LP_MAXSTMT];
  int nops, nins, nst;
  int test;                /* the loop test's LP_J* (jumps to LP_EXIT), or -1 */
  bool ok;
} LpBuild;

static int lp_new_opnd(LpBuild *b, LpOpnd o) {
  if (b->nops == LP_MAXOPS) { b->ok = false; return 0; }
  b->op[b->nops] = o;
  return b->nops++;
}

/* The operand of a number or a name (one per name). */
static int lp_leaf(LpBuild *b, const AstNode *n) {
  LpOpnd o = { 0 };
  if (n->kind == AST_NUM) { o.kind = LP_CONST; o.k = n->u.num; return lp_new_opnd(b, o); }
  if (n->slot < 0) { o.kind = LP_GLOBAL; o.sym = n->u.sym; }
  else { o.kind = LP_LOCAL; o.slot = n->slot; o.depth = n->depth; }
  for (int i = 0; i < b->nops; i++)
    if (b->op[i].kind == o.kind && b->op[i].sym == o.sym && b->op[i].slot == o.slot && b->op[i].depth == o.depth) return i;
  return lp_new_opnd(b, o);
}

static void lp_emit(LpBuild *b, int code, int op, int x, int y, int dst) {
  if (b->nins == LP_MAXINS) { b->ok = false; return; }
  b->ins[b->nins++] = (LpIns){ (uint8_t)code, (uint8_t)op, (uint8_t)b->nst, (uint8_t)x, (uint8_t)y, (uint8_t)dst, 0 };
}

static int lp_code(int op) {
  switch (op) {
  case OP_ADD: return LP_ADD;
  case OP_SUB: return LP_SUB;
  case OP_MUL: return LP_MUL;
  case OP_DIV: return LP_DIV;
  case OP_LT: return LP_LT;
  case OP_LE: return LP_LE;
  case OP_GT: return LP_GT;
  case OP_GE: return LP_GE;
  case OP_EQ: return LP_EQ;
  case OP_NE: return LP_NE;
  default: return LP_BIN;
  }
}

/* The operand holding pure number expression n, after the instructions computing it. */
static int lp_expr(LpBuild *b, const AstNode *n) {
  if (!b->ok) return 0;
  if (n->kind == AST_NUM || n->kind == AST_NAME) return lp_leaf(b, n);
  LpOpnd t = { .kind = LP_TEMP };
  if (n->kind == AST_UNARY) {
    int x = lp_expr(b, n->kids[0]);
    int d = lp_new_opnd(b, t);
    lp_emit(b, LP_UN, n->op, x, x, d);
    return d;
  }
  int x = lp_expr(b, n->kids[0]);
  int y = lp_expr(b, n->kids[1]);
  int d = lp_new_opnd(b, t);
  lp_emit(b, lp_code(n->op), n->op, x, y, d);
  return d;
}

/* A test that is a comparison: its instruction made the jump unless it holds (true), target to
** be filled in. */
static bool lp_fuse_test(LpBuild *b, const AstNode *expr) {
  if (!b->ok || expr->kind != AST_BINARY) return false;
  LpIns *in = &b->ins[b->nins - 1];
  if (in->code < LP_LT || in->code > LP_NE) return false;
  in->code = (uint8_t)(LP_JLT + (in->code - LP_LT));
  return true;
}

/* Statement s, the test (target NULL) or target = expr. */
static void lp_stmt(LpBuild *b, AstNode *s, AstNode *expr, const AstNode *target) {
  if (!b->ok || b->nst == LP_MAXSTMT) { b->ok = false; return; }
  int v = lp_expr(b, expr);
  if (!target && lp_fuse_test(b, expr)) b->test = b->nins - 1;
  else if (!target) lp_emit(b, LP_TEST, 0, v, v, v);
  else if (is_cmp_node(expr)) lp_emit(b, LP_MOVB, 0, v, v, lp_leaf(b, target));
  else if (expr->kind == AST_NUM || expr->kind == AST_NAME) lp_emit(b, LP_MOV, 0, v, v, lp_leaf(b, target));
  else if (b->ok) b->ins[b->nins - 1].dst = (uint8_t)lp_leaf(b, target);   /* the root's op stores into the name */
  if (!b->ok) return;
  b->st[b->nst++] = (LpStmt){ (uint16_t)b->nins, 0, target ? LPS_ASSIGN : LPS_TEST, s };
}

/* A body statement the program can hold: name = pure number expression, or an if of a pure
** number test whose branches hold only such statements. */
static bool lp_body_ok(const AstNode *s);
static bool lp_stmt_ok(const AstNode *s) {
  if (s->kind == AST_IF) return s->kids[0]->evn && lp_body_ok(s->kids[1]) && (s->nkids < 3 || lp_body_ok(s->kids[2]));
  if (s->kind != AST_ASSIGN || s->nkids != 2 || !s->kids[1]->evn) return false;
  const AstNode *t = s->kids[0];
  return t->kind == AST_NAME && (t->slot < 0 || t->depth == 0);
}
static bool lp_body_ok(const AstNode *s) {
  if (s->kind != AST_BLOCK) return lp_stmt_ok(s);
  for (uint32_t i = 0; i < s->nkids; i++)
    if (!lp_stmt_ok(s->kids[i])) return false;
  return true;
}

static void lp_body(LpBuild *b, AstNode *s);
/* A body statement (lp_stmt_ok): an if is its test, LP_JF to the else, the then branch, LP_JMP
** past the else, the else branch. */
static void lp_body_stmt(LpBuild *b, AstNode *s) {
  if (s->kind != AST_IF) { lp_stmt(b, s, s->kids[1], s->kids[0]); return; }
  if (!b->ok || b->nst == LP_MAXSTMT) { b->ok = false; return; }
  int v = lp_expr(b, s->kids[0]);
  if (!lp_fuse_test(b, s->kids[0])) lp_emit(b, LP_JF, 0, v, v, v);
  if (!b->ok) return;
  int jf = b->nins - 1, k = b->nst++;
  b->st[k] = (LpStmt){ (uint16_t)b->nins, 0, LPS_IF, s };
  lp_body(b, s->kids[1]);
  int jmp = -1;
  if (s->nkids > 2) { jmp = b->nins; lp_emit(b, LP_JMP, 0, 0, 0, 0); }
  if (!b->ok) return;
  b->ins[jf].jmp = (uint8_t)b->nins;
  b->st[k].alt = (uint16_t)b->nins;
  if (s->nkids > 2) {
    lp_body(b, s->kids[2]);
    if (b->ok) b->ins[jmp].jmp = (uint8_t)b->nins;
  }
}
static void lp_body(LpBuild *b, AstNode *s) {
  if (s->kind != AST_BLOCK) { lp_body_stmt(b, s); return; }
  for (uint32_t i = 0; i < s->nkids; i++) lp_body_stmt(b, s->kids[i]);
}

/* The truth of test c as the tree makes it (if and while: a boolean, a number not NaN, ...). */
static bool lp_truth(Interp *I, AstNode *c) {
  Value v = eval(I, c);
  if (v.t == VT_BOOL) return v.u.b;
  tmp_push(I, v);
  bool t = val_truth(I, v, c->span);
  tmp_pop(I, 1);
  val_release(v);
  return t;
}

/* The program of while loop n (or for loop n over a range: its body only), in arena a, or NULL
** when its test or a statement is not a number one (or it is too long). */
static struct NumLoop *lp_build(AstNode *n, Arena *a) {
  bool is_for = n->kind == AST_FOR;
  AstNode *cond = is_for ? NULL : n->kids[0], *body = n->kids[is_for ? 2 : 1];
  if (is_for ? !(n->kids[1]->kind == AST_BINARY && n->kids[1]->op == OP_RANGE) : !cond->evn) return NULL;
  if ((body->kind == AST_BLOCK && body->nkids == 0) || !lp_body_ok(body)) return NULL;
  LpBuild *b = mem_alloc(sizeof *b);
  b->nops = b->nins = b->nst = 0;
  b->test = -1;
  b->ok = true;
  if (cond) lp_stmt(b, cond, cond, NULL);
  lp_body(b, body);
  lp_emit(b, LP_END, 0, 0, 0, 0);
  lp_emit(b, LP_EXIT, 0, 0, 0, 0);
  if (b->ok && b->test >= 0) b->ins[b->test].jmp = (uint8_t)(b->nins - 1);
  struct NumLoop *p = NULL;
  if (b->ok) {
    p = arena_alloc(a, sizeof *p);
    p->nops = b->nops;
    p->nins = b->nins;
    p->ops = arena_alloc(a, (size_t)b->nops * sizeof *p->ops);
    p->ins = arena_alloc(a, (size_t)b->nins * sizeof *p->ins);
    p->stmts = arena_alloc(a, (size_t)b->nst * sizeof *p->stmts);
    memcpy(p->ops, b->op, (size_t)b->nops * sizeof *p->ops);
    memcpy(p->ins, b->ins, (size_t)b->nins * sizeof *p->ins);
    memcpy(p->stmts, b->st, (size_t)b->nst * sizeof *p->stmts);
  }
  mem_free(b);
  return p;
}

/* An instruction as it runs: its operands' places found when the loop starts. */
typedef struct LpRun { uint8_t code, op, stmt, jmp; Value *a, *b, *d; } LpRun;

/* while loop n by its program (see above); or for loop n over from + step * k for k in [lo, hi),
** its variable's place var. */
static Value eval_numloop(Interp *I, AstNode *n, Value *var, double from, double step, int64_t lo, int64_t hi) {
  const struct NumLoop *p = n->loop;
  if (var) {
    if (lo >= hi) return val_null();
    Value old = *var;
    *var = val_num(from + step * (double)lo);
    if (val_is_heap(old)) val_release(old);
  }
  Value *ops[LP_MAXOPS], tv[LP_MAXOPS];
  LpRun ins[LP_MAXINS];
  for (int i = 0; i < p->nops; i++) {
    const LpOpnd *o = &p->ops[i];
    switch (o->kind) {
    case LP_GLOBAL: ops[i] = &o->sym->global; break;
    case LP_LOCAL: ops[i] = &env_at(I, o->depth)->slots[o->slot]; break;
    default: tv[i] = val_num(o->k); ops[i] = &tv[i]; break;   /* a number, a temporary */
    }
  }
  for (int i = 0; i < p->nins; i++) {
    const LpIns *in = &p->ins[i];
    ins[i] = (LpRun){ in->code, in->op, in->stmt, in->jmp, ops[in->a], ops[in->b], ops[in->dst] };
  }
  const LpRun *ip = ins;
  for (;;) {
    const LpRun *c = ip++;
    double x, r;
    switch (c->code) {
#define LP_BINARY(CODE, EXPR)                                                    \
    case CODE:                                                                   \
      if (c->a->t != VT_NUM || c->b->t != VT_NUM) goto slow;                     \
      x = c->a->u.n;                                                             \
      r = (EXPR);                                                                \
      goto store;
    LP_BINARY(LP_ADD, x + c->b->u.n)
    LP_BINARY(LP_SUB, x - c->b->u.n)
    LP_BINARY(LP_MUL, x * c->b->u.n)
    LP_BINARY(LP_DIV, x / c->b->u.n)
    LP_BINARY(LP_LT, x < c->b->u.n)
    LP_BINARY(LP_LE, x <= c->b->u.n)
    LP_BINARY(LP_GT, x > c->b->u.n)
    LP_BINARY(LP_GE, x >= c->b->u.n)
    LP_BINARY(LP_EQ, x == c->b->u.n)
    LP_BINARY(LP_NE, x != c->b->u.n)
    LP_BINARY(LP_BIN, sc_binary(c->op, x, c->b->u.n))
#undef LP_BINARY
    case LP_UN:
      if (c->a->t != VT_NUM) goto slow;
      r = sc_unary(c->op, c->a->u.n);
      goto store;
    case LP_MOV:
      if (c->a->t != VT_NUM) goto slow;
      r = c->a->u.n;
      goto store;
    case LP_MOVB: {
      if (c->a->t != VT_NUM) goto slow;
      Value old = *c->d;
      *c->d = logical_value(c->a->u.n);
      if (val_is_heap(old)) val_release(old);
      continue;
    }
    case LP_TEST:
      if (c->a->t == VT_NUM && !isnan(c->a->u.n)) {
        if (c->a->u.n == 0) return val_null();
        continue;
      }
      if (c->a->t == VT_BOOL) {
        if (!c->a->u.b) return val_null();
        continue;
      }
      goto slow;
#define LP_JUMP(CODE, EXPR)                                                      \
    case CODE:                                                                   \
      if (c->a->t != VT_NUM || c->b->t != VT_NUM) goto slow;                     \
      x = c->a->u.n;                                                             \
      if (!(EXPR)) ip = ins + c->jmp;                                            \
      continue;
    LP_JUMP(LP_JLT, x < c->b->u.n)
    LP_JUMP(LP_JLE, x <= c->b->u.n)
    LP_JUMP(LP_JGT, x > c->b->u.n)
    LP_JUMP(LP_JGE, x >= c->b->u.n)
    LP_JUMP(LP_JEQ, x == c->b->u.n)
    LP_JUMP(LP_JNE, x != c->b->u.n)
#undef LP_JUMP
    case LP_EXIT:
      return val_null();
    case LP_JF:
      if (c->a->t == VT_NUM && !isnan(c->a->u.n)) {
        if (c->a->u.n == 0) ip = ins + c->jmp;
        continue;
      }
      if (c->a->t == VT_BOOL) {
        if (!c->a->u.b) ip = ins + c->jmp;
        continue;
      }
      goto slow;
    case LP_JMP:
      ip = ins + c->jmp;
      continue;
    default:                                              /* LP_END */
      interp_burn(I);
      if (I->interrupted) interp_check_interrupt(I, n->span);
      interp_abstract_poll(I, n->span);
      ip = ins;
      if (var) {                                          /* the next element, as eval_for */
        if (++lo >= hi) return val_null();
        Value old = *var;
        *var = val_num(from + step * (double)lo);
        if (val_is_heap(old)) val_release(old);
      }
      continue;
    }
  store:
    if (c->d->t == VT_NUM) c->d->u.n = r;
    else {
      Value old = *c->d;
      *c->d = val_num(r);
      if (val_is_heap(old)) val_release(old);
    }
    continue;
  slow: {                                                 /* the statement by its tree */
      const LpStmt *st = &p->stmts[c->stmt];
      ip = ins + st->end;
      if (st->kind == LPS_ASSIGN) {
        Value v = st->node->ev(I, st->node);
        if (val_is_heap(v)) val_release(v);
      } else if (st->kind == LPS_IF) {
        if (!lp_truth(I, st->node->kids[0])) ip = ins + st->alt;
      } else if (!lp_truth(I, st->node)) return val_null();
    }
  }
}

/* ---- operators ---- */
static inline Value eval_operand(Interp *I, AstNode *n) { return n->ev(I, n); }

/* X = X / 255: the operand v just read from name node k (AST_F_INTO), held at I->tmp[ntmp -
** depth], is the variable's value, and the result replaces it. When the variable and this
** evaluation hold the only references (R reuses an unshared vector the same way), the
** evaluation gives its reference up, so that the op, lent its operands, may write over the
** variable's value: nothing else can see it, the value is stored back at once, and an
** elementwise kernel writing in place runs to its end (op_run_kernel). The caller then does
** not release v. Eager only: a stage records ops, it does not run them. */
static bool lend_target(Interp *I, AstNode *k, Value v, int depth) {
  if (!(k->flags & AST_F_INTO) || I->stage || v.t != VT_MAT || v.u.m->refcount != 2) return false;
  Value *place = k->slot < 0 ? &k->u.sym->global : &env_at(I, k->depth)->slots[k->slot];   /* the assignment's */
  if (place->t != VT_MAT || place->u.m != v.u.m) return false;
  I->tmp[I->ntmp - depth] = val_null();
  v.u.m->refcount--;                         /* (2 -> 1: the variable's) */
  return true;
}

/* Marks the operands of n's right side that are n's own target (AST_F_INTO): of an elementwise
** operator, and the matrix of X = X[perm, ]. */
static void mark_into(AstNode *n) {
  AstNode *lhs = n->kids[0], *rhs = n->kids[1];
  bool rows = rhs->kind == AST_INDEX && rhs->nkids == 3 && rhs->kids[1] && !rhs->kids[2];
  if (lhs->kind != AST_NAME || !((rhs->kind == AST_BINARY && (op_info[rhs->op].flags & OPF_EW)) || rhs->kind == AST_UNARY || rows))
    return;
  for (uint32_t k = 0; k < (rows ? 1 : rhs->nkids); k++) {
    AstNode *x = rhs->kids[k];
    if (x->kind == AST_NAME && x->u.sym == lhs->u.sym && x->slot == lhs->slot && x->depth == lhs->depth) x->flags |= AST_F_INTO;
  }
}

/* ---- a vector's names (docs/language.md §16, "Named elements") ---- */
static inline bool has_names(Value v) {
  Value p = ad_primal(v);
  return p.t == VT_MAT && p.u.m->names;
}

/* A staged block that meets a vector's names runs eagerly (graphs carry no names). */
static void names_unstaged(Interp *I, Span sp) {
  if (I->stage) stage_eager_here(I, "a vector's names (graphs do not carry them)", sp);
}

/* r (owned) given the names R keeps through an operator: the first operand's, else the second's,
** when it has as many elements. Returned. */
__attribute__((noinline)) static Value pass_names(Value r, Value a, Value b) {
  if (r.t != VT_MAT || r.u.m->refcount != 1) return r;
  int64_t n = tensor_numel(r.u.m);
  Value pa = ad_primal(a), pb = ad_primal(b);
  if (pa.t == VT_MAT && pa.u.m->names && pa.u.m->names->n == n) tensor_set_names(r.u.m, pa.u.m->names);
  else if (pb.t == VT_MAT && pb.u.m->names && pb.u.m->names->n == n) tensor_set_names(r.u.m, pb.u.m->names);
  return r;
}

/* Operands that are not both numbers, or ops without a number fast path. */
__attribute__((noinline)) static Value binary_slow(Interp *I, AstNode *n, Value a, bool have_b, Value b) {
  tmp_push(I, a);
  Value pa = ad_primal(a);
  if (!have_b && n->op == OP_MUL && pa.t == VT_MAT && pa.u.m->st->sparse) {
    Value wx = eval_masked(I, n->kids[1], a, n->span);   /* W * (U %*% t(V) - X): at W's cells only */
    if (wx.t != VT_UNBOUND) {                        /* (masked.c) */
      tmp_pop(I, 1);
      val_release(a);
      return wx;
    }
  }
  if (!have_b) b = eval_operand(I, n->kids[1]);
  tmp_push(I, b);
  bool named = has_names(a) || has_names(b);
  if (named) names_unstaged(I, n->span);
  bool into_a = !named && lend_target(I, n->kids[0], a, 2), into_b = !named && !into_a && lend_target(I, n->kids[1], b, 1);
  Value r = op_binary_lent(I, (OpKind)n->op, a, b, true, n->span);   /* a and b are ours and dropped right after */
  if (named) r = pass_names(r, a, b);
  tmp_pop(I, 2);
  if (!into_b) val_release(b);
  if (!into_a) val_release(a);
  return r;
}

static Value eval_binary(Interp *I, AstNode *n) {
  Value a = eval_operand(I, n->kids[0]);
  if (a.t != VT_NUM || !(op_info[n->op].flags & OPF_EW)) return binary_slow(I, n, a, false, a);
  Value b = eval_operand(I, n->kids[1]);
  if (b.t != VT_NUM) return binary_slow(I, n, a, true, b);
  double r = sc_binary(n->op, a.u.n, b.u.n);
  if (!isfinite(r) && I->nan_check && isfinite(a.u.n) && isfinite(b.u.n)) nan_check_fail(I, op_info[n->op].sym, n->span);
  return op_info[n->op].flags & OPF_CMP ? logical_value(r) : val_num(r);
}

static Value eval_unary(Interp *I, AstNode *n) {
  Value a = eval_operand(I, n->kids[0]);
  if (a.t == VT_NUM && !I->nan_check) return n->op == OP_NOT && a.u.n == a.u.n ? val_bool(a.u.n == 0) : val_num(sc_unary(n->op, a.u.n));
  tmp_push(I, a);
  bool named = has_names(a);
  if (named) names_unstaged(I, n->span);
  bool into = !named && lend_target(I, n->kids[0], a, 1);
  Value r = op_unary_lent(I, (OpKind)n->op, a, true, n->span);
  if (named) r = pass_names(r, a, a);
  tmp_pop(I, 1);
  if (!into) val_release(a);
  return r;
}

__attribute__((noinline)) static bool scalar_truth(Interp *I, AstNode *n, const char *op) {
  Value v = eval(I, n);
  char d[64];
  Value p = ad_primal(v);                  /* staged, a box: its shape is known (fuzz_diff) */
  if (p.t == VT_MAT && tensor_numel(p.u.m) != 1) {
    val_describe(p, d, sizeof d);
    val_release(v);
    mls_throw(I, n->span, "'%s' takes a boolean or a number, got %s (use '%c' for elementwise)", op, d, op[0]);
  }
  tmp_push(I, v);
  bool b = val_truth(I, v, n->span);
  tmp_pop(I, 1);
  val_release(v);
  return b;
}

/* ---- matrix literals ---- */
__attribute__((noinline)) static Value eval_matrix(Interp *I, AstNode *n) {
  int mark = I->ntmp;
  uint32_t nrows = n->nkids;
  if (nrows == 0) return val_mat(tensor_new(I, 0, 0));
  int64_t total_rows = 0, width = -1;
  bool any_box = false;
  for (uint32_t r = 0; r < nrows; r++) {
    AstNode *row = n->kids[r];
    int64_t h = -1, w = 0;
    for (uint32_t k = 0; k < row->nkids; k++) {
      Value v = eval(I, row->kids[k]);
      tmp_push(I, v);
      if (v.t == VT_BOX) { any_box = true; v = ad_primal(v); }
      int64_t bh, bw;
      if (v.t == VT_NUM || v.t == VT_BOOL) { bh = 1; bw = 1; }
      else if (v.t == VT_MAT) { bh = tensor_rows(v.u.m); bw = tensor_cols(v.u.m); }
      else if (v.t == VT_STR && nrows == 1 && row->nkids == 1) {   /* L[["b"]]: R's [[ ]] by name, */
        val_retain(v);                                              /* read as L["b"] */
        tmp_release_to(I, mark);
        return v;
      } else {
        char d[64];
        mls_throw(I, row->kids[k]->span, "a matrix literal holds numbers and matrices, got %s", val_describe(v, d, sizeof d));
      }
      if (h >= 0 && bh != h)
        mls_throw(I, row->kids[k]->span, "blocks in a row of a matrix literal must have the same number of rows: %lld and %lld",
                  (long long)h, (long long)bh);
      h = bh;
      w += bw;
    }
    if (width >= 0 && w != width)
      mls_throw(I, row->span, "rows of a matrix literal must have the same number of columns: %lld and %lld",
                (long long)width, (long long)w);
    width = w;
    total_rows += h;
  }
  if (any_box) {                     /* traced by grad or staged: each block placed in turn */
    Value acc = val_num(0);
    int idx = mark;
    int64_t r0 = 0;
    for (uint32_t r = 0; r < nrows; r++) {
      AstNode *row = n->kids[r];
      int64_t c0 = 0, h = 1;
      for (uint32_t k = 0; k < row->nkids; k++) {
        Value v = I->tmp[idx++];
        Value p = ad_primal(v);
        h = p.t == VT_MAT ? tensor_rows(p.u.m) : 1;
        acc = ad_place(I, acc, v, total_rows, width, r0, c0, n->span);
        tmp_push(I, acc);                 /* each acc stays on the stack until the mark */
        c0 += p.t == VT_MAT ? tensor_cols(p.u.m) : 1;
      }
      r0 += h;
    }
    val_retain(acc);
    tmp_release_to(I, mark);
    return acc;
  }
  Tensor *t = tensor_new(I, total_rows, width);
  double *d = tensor_data(t);
  int idx = mark;
  int64_t r0 = 0;
  for (uint32_t r = 0; r < nrows; r++) {
    AstNode *row = n->kids[r];
    int64_t c0 = 0, h = 1;
    for (uint32_t k = 0; k < row->nkids; k++) {
      Value v = I->tmp[idx++];
      if (v.t == VT_MAT) {
        const Tensor *b = v.u.m;
        h = tensor_rows(b);
        int64_t budget = 0;
        for (int64_t i = 0; i < tensor_rows(b); i++) {
          if (interp_tick(I, &budget, tensor_cols(b))) { tensor_free_ref(t); interp_check_interrupt(I, n->span); }
          for (int64_t j = 0; j < tensor_cols(b); j++) d[(r0 + i) * width + c0 + j] = tensor_get(b, i, j);
        }
        c0 += tensor_cols(b);
      } else {
        d[r0 * width + c0] = v.t == VT_NUM ? v.u.n : v.u.b;
        h = 1;
        c0++;
      }
    }
    r0 += h;
  }
  tmp_release_to(I, mark);
  return val_mat(t);
}

/* ---- control flow ---- */
static inline bool staging_blocks(const Interp *I);
static Value eval_branch(Interp *I, AstNode *s);
/* Runs one iteration's body; false when the loop must stop (break, or a return in flight). */
static inline __attribute__((always_inline)) bool loop_body(Interp *I, AstNode *body, Span sp) {
  if (body->kind == AST_BLOCK && body->nkids > 0 && !staging_blocks(I)) {
    /* eval_block's statements, the block's value (dropped here) not kept */
    for (uint32_t i = 0, last = body->nkids - 1;; i++) {
      AstNode *k = body->kids[i];
      Value v = k->ev(I, k);
      if (val_is_heap(v)) val_release(v);
      if (I->ctl || i == last) break;
      if (I->interrupted) interp_check_interrupt(I, k->span);
    }
  } else val_release(eval_branch(I, body));
  interp_burn(I);
  if (I->interrupted) interp_check_interrupt(I, sp);
  interp_abstract_poll(I, sp);
  if (!I->ctl) return true;
  if (I->ctl == CTL_RETURN) return false;
  bool go_on = I->ctl == CTL_NEXT;
  I->ctl = CTL_NONE;
  return go_on;
}
/* Takes v. While staging, finding the place records the assignment, which may fail: v is
** held on the temporaries meanwhile. */
static void assign_name(Interp *I, AstNode *var, Value v) {
  if (!I->stage) { store(assign_place(I, var), v); return; }
  tmp_push(I, v);
  Value *place = assign_place(I, var);
  tmp_pop(I, 1);
  store(place, v);
}
Value *eval_name_place(Interp *I, AstNode *n) { return lookup_place(I, n); }
void eval_assign_name(Interp *I, AstNode *n, Value v) { assign_name(I, n, v); }

/* ---- loops a stage traces as one graph node (staging/loop.h) ---- */
/* The variables a loop's body assigns: locals of the running function (slots at depth 0), each
** once. ok is false for a body the node cannot hold: a function literal, break, next, return,
** source(), an assignment to anything but a local or an element of one, too many variables. */
typedef struct LoopScan { AstNode *v[LOOP_MAX_CARRY]; int n; bool ok, branches; } LoopScan;

static void scan_add(LoopScan *s, const AstNode *t) {
  if (t->kind == AST_INDEX) t = t->kids[0];
  if (t->kind != AST_NAME || (t->slot >= 0 && t->depth != 0)) { s->ok = false; return; }
  for (int i = 0; i < s->n; i++)                        /* (a global: slot -1, by its symbol) */
    if (s->v[i]->slot == t->slot && (t->slot >= 0 || s->v[i]->u.sym == t->u.sym)) return;
  if (s->n == LOOP_MAX_CARRY) { s->ok = false; return; }
  s->v[s->n++] = (AstNode *)t;
}

/* ---- an if in a loop node's body, on a traced test: a choice between both branches ---- */
/* An expression if_select may evaluate whether or not its test holds: names, numbers, ops and
** builtins that are exactly one op (or read shapes): nothing that can run an effect or a user
** function. */
static bool pure_expr(const AstNode *n) {
  switch (n->kind) {
  case AST_NUM: case AST_STR: case AST_BOOL: case AST_NULL: case AST_NAME: return true;
  case AST_BINARY: case AST_UNARY: case AST_INDEX: case AST_MATRIX: case AST_ROW: case AST_ARG: break;
  case AST_CALL: {
    const AstNode *f = n->kids[0];
    if (f->kind != AST_NAME || f->slot >= 0 || !f->u.sym->bi || f->u.sym->global.t != VT_UNBOUND) return false;
    const Builtin *b = f->u.sym->bi;
    if ((b->flags & (BI_EFFECT | BI_LAZY)) || (b->op == OP_NONE && !(b->flags & BI_SHAPE))) return false;
    for (uint32_t i = 1; i < n->nkids; i++)
      if (!pure_expr(n->kids[i])) return false;
    return true;
  }
  default: return false;
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (n->kids[i] && !pure_expr(n->kids[i])) return false;
  return true;
}

/* A branch of assignments of pure expressions to names or elements of them (collected in s). */
static bool pure_branch(const AstNode *n, LoopScan *s) {
  if (n->kind == AST_BLOCK) {
    for (uint32_t i = 0; i < n->nkids; i++)
      if (!pure_branch(n->kids[i], s)) return false;
    return true;
  }
  if (n->kind != AST_ASSIGN || n->nkids != 2) return false;
  scan_add(s, n->kids[0]);
  return s->ok && pure_expr(n->kids[0]) && pure_expr(n->kids[1]);
}

static void loop_scan(const AstNode *n, LoopScan *s) {
  if (!n || !s->ok) return;
  switch (n->kind) {
  case AST_FUNCTION: case AST_RETURN: case AST_BREAK: case AST_NEXT: case AST_SOURCE_AS: s->ok = false; return;
  case AST_ASSIGN: scan_add(s, n->kids[0]); break;
  case AST_MASSIGN: for (uint32_t i = 0; i + 1 < n->nkids; i++) scan_add(s, n->kids[i]); break;
  case AST_FOR: scan_add(s, n->kids[0]); break;
  case AST_IF: {                         /* a branch if_select cannot make a choice of */
    LoopScan t = { .n = 0, .ok = true };
    if (!pure_branch(n->kids[1], &t) || (n->nkids > 2 && !pure_branch(n->kids[2], &t))) s->branches = true;
    break;
  }
  default: break;
  }
  for (uint32_t i = 0; i < n->nkids; i++) loop_scan(n->kids[i], s);
}

/* The places of the scanned variables: locals of the running env, or at the top level of a
** script (no env) globals (false: neither). */
static bool scan_places(Interp *I, const LoopScan *s, Value **places, Symbol **syms) {
  Env *e = I->env;
  for (int i = 0; i < s->n; i++) {
    const AstNode *v = s->v[i];
    if (e ? v->slot < 0 || v->slot >= e->n : v->slot >= 0) return false;
    places[i] = e ? &e->slots[v->slot] : &v->u.sym->global;
    syms[i] = v->u.sym;
  }
  return true;
}

/* A for loop's variable a node can set: a local of the running function (a global at a script's
** top level) that the body does not assign. */
static bool loop_var_ok(Interp *I, const AstNode *var, const LoopScan *s) {
  if (I->env ? var->slot < 0 || var->depth != 0 : var->slot >= 0) return false;
  for (int i = 0; i < s->n; i++)
    if (s->v[i]->slot == var->slot && (var->slot >= 0 || s->v[i]->u.sym == var->u.sym)) return false;
  return true;
}

static Value *loop_var_place(Interp *I, const AstNode *var) {
  return I->env ? &env_at(I, 0)->slots[var->slot] : &var->u.sym->global;
}

/* Whether for loop n can be a node, its body's variables in s. unroll_ifs: a loop whose body
** has an if that cannot be a choice is unrolled instead (a known length; MLS_LOOP_UNROLL=0, the
** tests' setting, makes it a node too). */
static bool for_scan(Interp *I, const AstNode *n, LoopScan *s, bool unroll_ifs) {
  loop_scan(n->kids[2], s);
  return s->ok && !(unroll_ifs && s->branches && stage_loop_unroll(I) > 0) && !(n->flags & AST_F_REMOTE) &&
         loop_var_ok(I, n->kids[0], s);
}

/* Whether while loop n can be a node, its body's variables in s (a condition that assigns: not). */
static bool while_scan(const AstNode *n, LoopScan *s) {
  LoopScan c = { .n = 0, .ok = true };
  loop_scan(n->kids[1], s);
  loop_scan(n->kids[0], &c);
  return s->ok && c.ok && c.n == 0;
}

/* stage_loop_begin on the places of the variables in s (NULL: not a node here). */
static LoopStage *loop_begin(Interp *I, bool is_while, const LoopScan *s, Span sp) {
  Value *places[LOOP_MAX_CARRY];
  Symbol *syms[LOOP_MAX_CARRY];
  if (!scan_places(I, s, places, syms)) return NULL;
  return stage_loop_begin(I, is_while, s->n, places, syms, sp);
}

/* The body's first run while loop node L is traced. Under a grad traced inside the stage
** (stage_loop_grad) an effect there stops it before it happens (I->loop_restart): L is dropped,
** the variables hold their values from before the loop, false (the caller runs the loop as before). */
typedef struct BodyJob { AstNode *body; Span sp; } BodyJob;
static void body_job(Interp *I, void *ud) {
  BodyJob *j = ud;
  loop_body(I, j->body, j->sp);
}

static bool staged_body(Interp *I, LoopStage *L, AstNode *body, Span sp) {
  BodyJob j = { body, sp };
  bool restart = mls_pcall(I, body_job, &j) != 0;
  if (restart && !(I->loop_restart && stage_loop_grad(L))) mls_rethrow(I);
  I->loop_restart = I->loop_restart && !stage_loop_grad(L);
  if (restart) stage_loop_abort(I, L);
  return !restart;
}

/* for (var in seq) body while a stage traces (seq a vector of cnt numbers longer than the unroll
** limit): as one loop node. -1: done (var holds the last element, as after the eager loop); 0:
** not staged, run it as before; k > 0: the stage went eager after element k - 1, run on from k. */
static int64_t for_staged(Interp *I, AstNode *n, Value seq, int64_t cnt) {
  AstNode *var = n->kids[0], *body = n->kids[2];
  if (seq.t != VT_MAT || cnt <= stage_loop_unroll(I)) return 0;
  LoopScan s = { .n = 0, .ok = true };
  LoopStage *L = for_scan(I, n, &s, true) ? loop_begin(I, false, &s, n->span) : NULL;
  if (!L) return 0;
  int64_t c = tensor_cols(seq.u.m);
  assign_name(I, var, stage_loop_index(I, L, val_num(tensor_get(seq.u.m, 0, 0)), loop_var_place(I, var)));
  if (!staged_body(I, L, body, n->span)) return 0;
  int64_t k = stage_loop_end(I, L, seq, cnt);
  if (k < 0) assign_name(I, var, val_num(tensor_get(seq.u.m, (cnt - 1) / c, (cnt - 1) % c)));
  return k;
}

/* for (var in a:b) while a stage traces, a or b a staged value (the trip count is the graph's):
** as one loop node whose runs compute the range. As for_staged. */
static int64_t for_staged_range(Interp *I, AstNode *n, Value a, Value b) {
  AstNode *var = n->kids[0], *iter = n->kids[1], *body = n->kids[2];
  Value pa = ad_primal(a), pb = ad_primal(b);
  if (pa.t != VT_NUM || pb.t != VT_NUM || !isfinite(pa.u.n) || !isfinite(pb.u.n) || fabs(pb.u.n - pa.u.n) >= 1e15)
    return 0;                                           /* (eager's checks and errors) */
  LoopScan s = { .n = 0, .ok = true };
  LoopStage *L = for_scan(I, n, &s, false) ? loop_begin(I, false, &s, n->span) : NULL;
  if (!L) return 0;
  stage_loop_range(I, L, a, b, iter->span, var->u.sym, loop_var_place(I, var));
  int64_t cnt = op_range_length(pa.u.n, pb.u.n);
  assign_name(I, var, stage_loop_index(I, L, val_num(pa.u.n), loop_var_place(I, var)));
  if (!staged_body(I, L, body, n->span)) return 0;
  return stage_loop_end(I, L, val_null(), cnt);
}

/* Runs branch b (NULL: none) speculatively: its assignments' values into out[] (owned), the
** places restored. False: it failed (an error, caught) and nothing is kept. */
typedef struct SelJob { AstNode *b; } SelJob;
static void sel_run(Interp *I, void *ud) {
  SelJob *j = ud;
  if (j->b) val_release(eval(I, j->b));
}

static bool sel_branch(Interp *I, AstNode *b, int n, Value **places, const Value *saved, Value *out) {
  SelJob job = { b };
  int err = mls_pcall(I, sel_run, &job);
  for (int k = 0; k < n; k++) {
    out[k] = err ? val_null() : *places[k];
    if (!err) val_retain(out[k]);
    val_retain(saved[k]);
    Value old = *places[k];
    *places[k] = saved[k];
    val_release(old);
  }
  return !err;
}

/* if (c) A else B, c traced by a loop node's body: both branches run (each from the variables'
** values before the if) and each variable they assign becomes ifelse(c, its A value, its B
** value), so the body stays one graph. Only branches of pure assignments whose ops cannot fail
** at a later run (stage_pure_since); otherwise false, and nothing is changed but what the
** branch taken (c's value now) did when the speculative run had to stop (the stage then eager). */
static bool if_select(Interp *I, AstNode *n, Value c) {
  LoopScan s = { .n = 0, .ok = true };
  if (!pure_branch(n->kids[1], &s) || (n->nkids > 2 && !pure_branch(n->kids[2], &s))) return false;
  Value *places[LOOP_MAX_CARRY];
  Symbol *syms[LOOP_MAX_CARRY];
  if (!scan_places(I, &s, places, syms)) return false;
  Value saved[LOOP_MAX_CARRY], a[LOOP_MAX_CARRY], b[LOOP_MAX_CARRY];
  for (int k = 0; k < s.n; k++) {               /* (unbound: then both branches must assign it) */
    Value p = ad_primal(*places[k]);
    if (p.t != VT_NUM && p.t != VT_BOOL && p.t != VT_MAT && p.t != VT_UNBOUND) return false;   /* (a list ...) */
  }
  int mark = I->ntmp;
  for (int k = 0; k < s.n; k++) { saved[k] = *places[k]; val_retain(saved[k]); tmp_push(I, saved[k]); }
  Value cp = ad_primal(c);
  bool truth = cp.t == VT_BOOL ? cp.u.b : cp.t == VT_NUM && cp.u.n != 0;
  int32_t gmark = stage_graph_mark(I);
  bool oka = sel_branch(I, n->kids[1], s.n, places, saved, a);
  for (int k = 0; k < s.n && oka; k++) tmp_push(I, a[k]);
  bool okb = oka && sel_branch(I, n->nkids > 2 ? n->kids[2] : NULL, s.n, places, saved, b);
  for (int k = 0; k < s.n && okb; k++) tmp_push(I, b[k]);
  bool same = okb && stage_pure_since(I, gmark) && !ad_any_grad(1, &c);
  for (int k = 0; k < s.n && same; k++)          /* grad traces none of it: both branches' ops */
    same = !ad_any_grad_deep(1, &a[k]) && !ad_any_grad_deep(1, &b[k]);   /* are not on its tape */
  for (int k = 0; k < s.n && same; k++) {       /* the same type and shape either way */
    Value x = ad_primal(a[k]), y = ad_primal(b[k]);
    same = x.t == y.t && (x.t == VT_NUM || x.t == VT_BOOL || x.t == VT_MAT) && (x.t != VT_MAT || (tensor_rows(x.u.m) == tensor_rows(y.u.m) && tensor_cols(x.u.m) == tensor_cols(y.u.m) &&
                                            !x.u.m->logical && !y.u.m->logical));   /* (a mask stays a mask) */
  }
  if (!same) {                                   /* the branch taken, as eager code runs it */
    stage_select_abandon(I, n->span, "an if in a loop's body depends on a staged value");
    tmp_release_to(I, mark);
    if (truth) val_release(eval(I, n->kids[1]));
    else if (n->nkids > 2) val_release(eval(I, n->kids[2]));
    return true;
  }
  for (int k = 0; k < s.n; k++) {
    Value v = op_ifelse(I, c, a[k], b[k], n->span);
    Value old = *places[k];
    *places[k] = v;
    val_release(old);
  }
  tmp_release_to(I, mark);
  return true;
}

/* A range's elements as a column (for_staged's sequence), on the temp stack. */
static Value range_column(Interp *I, double from, double step, int64_t cnt) {
  Tensor *t = tensor_new(I, cnt, 1);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < cnt; i++) d[i] = from + step * (double)i;
  Value v = val_mat(t);
  tmp_push(I, v);
  return v;
}

__attribute__((noinline)) static Value eval_for(Interp *I, AstNode *n) {
  AstNode *var = n->kids[0], *iter = n->kids[1], *body = n->kids[2];
  if (iter->kind == AST_BINARY && iter->op == OP_RANGE) {      /* a:b without a vector */
    Value a = eval(I, iter->kids[0]);
    tmp_push(I, a);
    Value b = eval(I, iter->kids[1]);
    tmp_push(I, b);
    int64_t lo = 0;
    if (I->stage && (a.t == VT_BOX || b.t == VT_BOX) && !(n->flags & AST_F_REMOTE)) {
      lo = for_staged_range(I, n, a, b);                /* (a staged trip count) */
      if (lo < 0) {
        tmp_release_to(I, I->ntmp - 2);
        return val_null();
      }
    }
    double from = val_to_num(I, a, iter->kids[0]->span, "the start of ':'");
    double to = val_to_num(I, b, iter->kids[1]->span, "the end of ':'");
    tmp_release_to(I, I->ntmp - 2);
    int64_t cnt = op_range_count(I, from, to, iter->span);   /* (op_range's checks) */
    double step = to >= from ? 1.0 : -1.0;
    int64_t hi = cnt;
    if (I->stage && lo == 0 && cnt > stage_loop_unroll(I) && !(n->flags & AST_F_REMOTE)) {
      Value sv = range_column(I, from, step, cnt);
      int64_t k = for_staged(I, n, sv, cnt);
      tmp_pop(I, 1);
      val_release(sv);
      if (k < 0) return val_null();
      lo = k;
    }
    if (n->loop && !I->stage && !I->nan_check && !staging_blocks(I))   /* a number loop */
      return eval_numloop(I, n, var->slot < 0 ? &var->u.sym->global : &env_at(I, var->depth)->slots[var->slot], from, step,
                          lo, hi);
    ParforRun pr;                            /* parfor (..., mode=REMOTE) under mpirun */
    bool remote = (n->flags & AST_F_REMOTE) && mpi_parfor_begin(I, n, cnt, &lo, &hi, &pr);
    for (int64_t i = lo; i < hi; i++) {
      assign_name(I, var, val_num(from + step * (double)i));
      if (!loop_body(I, body, n->span)) {
        if (remote) mpi_parfor_stop(I, &pr, n->span);
        break;
      }
    }
    if (remote) mpi_parfor_end(I, &pr);
    return val_null();
  }
  Value seq = eval(I, iter);
  if (seq.t == VT_BOX) {                     /* iterating over a staged value */
    Value p = ad_concrete(I, seq, iter->span, "a for loop's sequence");
    val_retain(p);
    val_release(seq);
    seq = p;
  }
  tmp_push(I, seq);
  interp_abstract_poll(I, iter->span);
  /* for (i in progress(x)): a bar on a terminal's stderr (progress.c) */
  bool bar = iter->kind == AST_CALL && iter->kids[0]->kind == AST_NAME && iter->kids[0]->u.sym->bi &&
             iter->kids[0]->u.sym->bi->fn == bi_progress && iter->kids[0]->u.sym->global.t == VT_UNBOUND;
  int64_t cnt;
  switch (seq.t) {
  case VT_MAT: cnt = tensor_numel(seq.u.m); break;
  case VT_LIST: cnt = seq.u.l->n; break;
  case VT_NULL: cnt = 0; break;
  case VT_NUM: case VT_BOOL: case VT_STR: cnt = 1; break;
  default: {
    char d[64];
    mls_throw(I, iter->span, "cannot iterate over %s", val_describe(seq, d, sizeof d));
  }
  }
  int64_t lo = 0, hi = cnt;
  if (I->stage && !bar) {
    lo = for_staged(I, n, seq, cnt);
    if (lo < 0) {
      tmp_pop(I, 1);
      val_release(seq);
      return val_null();
    }
  }
  Progress pb;
  if (bar && I->progress) progress_start_shown(&pb, I->progress, I->display_ctx, cnt);
  else progress_start(&pb, bar ? I->errf : NULL, cnt, &I->bar_open);
  ParforRun pr;                              /* parfor (..., mode=REMOTE) under mpirun */
  bool remote = (n->flags & AST_F_REMOTE) && mpi_parfor_begin(I, n, cnt, &lo, &hi, &pr);
  for (int64_t i = lo; i < hi; i++) {
    Value x;
    if (seq.t == VT_MAT) {
      int64_t c = tensor_cols(seq.u.m);
      x = val_num(tensor_get(seq.u.m, i / c, i % c));
    } else if (seq.t == VT_LIST) {
      x = seq.u.l->items[i];
      val_retain(x);
    } else {
      x = seq;
      val_retain(x);
    }
    assign_name(I, var, x);
    if (!loop_body(I, body, n->span)) {
      if (remote) mpi_parfor_stop(I, &pr, n->span);
      break;
    }
    progress_step(&pb, i + 1);
  }
  progress_end(&pb);
  if (remote) mpi_parfor_end(I, &pr);
  tmp_pop(I, 1);
  val_release(seq);
  return val_null();
}

/* while (cond) body while a stage traces: as one loop node (NULL: not here). */
static LoopStage *while_begin(Interp *I, AstNode *n) {
  LoopScan s = { .n = 0, .ok = true };
  return while_scan(n, &s) ? loop_begin(I, true, &s, n->span) : NULL;
}

typedef struct CondJob { AstNode *cond; Value v; } CondJob;
static void cond_job(Interp *I, void *ud) {
  CondJob *j = ud;
  j->v = eval_operand(I, j->cond);
}

static Value eval_while(Interp *I, AstNode *n) {
  AstNode *cond = n->kids[0], *body = n->kids[1];
  if (n->loop && !I->stage && !I->nan_check && !staging_blocks(I)) return eval_numloop(I, n, NULL, 0, 0, 0, 0);
  LoopStage *L = I->stage ? while_begin(I, n) : NULL;
  for (;;) {
    bool t;
    if (!L && evn_truth(I, cond, &t)) {              /* a number test: no Value made */
      if (!t || !loop_body(I, body, n->span)) break;
      continue;
    }
    Value c;
    if (L) {                                             /* (an effect there: as staged_body) */
      CondJob cj = { cond, val_null() };
      if (mls_pcall(I, cond_job, &cj) != 0) {
        if (!(I->loop_restart && stage_loop_grad(L))) mls_rethrow(I);
        I->loop_restart = false;
        stage_loop_abort(I, L);
        L = NULL;
        continue;
      }
      c = cj.v;
    } else {
      c = eval_operand(I, cond);
    }
    if (L) {                                             /* the first test, traced */
      tmp_push(I, c);
      bool staged = stage_loop_cond(I, L, c);
      tmp_pop(I, 1);
      if (staged) {
        val_release(c);
        if (staged_body(I, L, body, n->span) && stage_loop_end(I, L, val_null(), 0) < 0) return val_null();
        L = NULL;
        continue;                                        /* eager from the second test on */
      }
      L = NULL;
    }
    if (c.t == VT_BOOL) t = c.u.b;
    else {
      tmp_push(I, c);
      t = val_truth(I, c, cond->span);
      tmp_pop(I, 1);
      val_release(c);
    }
    if (!t) break;
    if (!loop_body(I, body, n->span)) break;
  }
  return val_null();
}

/* A loop at the top level of a --staged script that can be a loop node of its block's graph
** (staging/loop.h): its body (and condition) scanned as for_staged and while_begin scan them. */
static bool loop_node_stageable(Interp *I, const AstNode *s) {
  if (I->env || I->nframes > 0) return false;         /* (a function's blocks: relative graphs) */
  LoopScan b = { .n = 0, .ok = true };
  return s->kind == AST_WHILE ? while_scan(s, &b) : for_scan(I, s, &b, true);
}

/* --staged: the statements a straight-line block is made of (control flow splits blocks; a loop
** that can be a loop node is a statement of its block). */
static bool stageable(Interp *I, const AstNode *s) {
  if (s->flags & AST_F_HOISTED) return false;         /* defined before the first statement */
  switch (s->kind) {
  case AST_WHILE: case AST_FOR:
    return loop_node_stageable(I, s);
  case AST_IF: case AST_BREAK: case AST_NEXT: case AST_RETURN: case AST_SOURCE_AS:
  case AST_BLOCK:
    return false;
  default:
    return true;
  }
}

/* --staged at top level, or the body of a function jit runs as staged blocks (block_frame) and
** the body of every function it calls outside a trace (docs/staging.md "Control flow"). */
static inline bool staging_blocks(const Interp *I) {
  if (I->stage) return false;
  if (I->block_frame) return I->block_frame <= I->nframes && I->env;
  return I->staged_mode && !I->env && I->nframes == 0;
}

/* Runs kids[*i ..] of a block while they are stageable, as one staged block; *i moves past it.
** Returns the value of the last statement run (owned). */
static Value run_staged(Interp *I, AstNode **kids, uint32_t n, uint32_t *i) {
  uint32_t j = *i;
  while (j < n && stageable(I, kids[j])) j++;
  Value v = stage_block(I, kids + *i, (int)(j - *i));
  *i = j;
  return v;
}

/* A branch of an if or a loop's body: a block as eval_block runs it; under staged blocks a
** single statement without braces (`if (u) G = A %*% V else G = ...`) is a staged block of
** its own, as the same statement in braces is. */
static Value eval_branch(Interp *I, AstNode *s) {
  if (s->kind != AST_BLOCK && staging_blocks(I) && stageable(I, s)) return stage_block(I, &s, 1);
  return eval(I, s);
}

static Value eval_block(Interp *I, AstNode *n) {
  uint32_t last = n->nkids;
  if (last == 0) return val_null();
  if (staging_blocks(I)) {                         /* --staged: a loop or branch body, a function body */
    for (uint32_t i = 0; i < last;) {
      Value v = stageable(I, n->kids[i]) ? run_staged(I, n->kids, last, &i) : eval(I, n->kids[i++]);
      if (I->ctl) { val_release(v); return val_null(); }
      if (i == last) return v;                     /* the block's value: its last statement's */
      val_release(v);
    }
    return val_null();
  }
  for (uint32_t i = 0; i + 1 < last; i++) {        /* all but the last: values dropped */
    AstNode *k = n->kids[i];
    Value v = k->ev(I, k);
    if (val_is_heap(v)) val_release(v);
    if (I->ctl) return val_null();
    if (I->interrupted) interp_check_interrupt(I, k->span);   /* nothing after it runs */
  }
  AstNode *k = n->kids[last - 1];
  return k->ev(I, k);
}

/* ---- namespaces and command-line values ---- */
__attribute__((noinline)) static Value eval_clparam(Interp *I, AstNode *n) {
  for (int i = 0; i < I->nparams; i++)
    if (I->params[i].name == n->u.sym) { val_retain(I->params[i].v); return I->params[i].v; }
  const char *nm = n->u.sym->name;
  if (nm[0] >= '0' && nm[0] <= '9')
    mls_throw(I, n->span, "command-line value '$%s' was not given (pass it with -args)", nm);
  char msg[900];
  interp_missing_params_msg(I, nm, msg, sizeof msg);   /* all the script's missing ones at once */
  mls_throw(I, n->span, "%s", msg);
}

/* ns::name: ns is the namespace bound to "ns::" (kids[0], a name resolved as any other: a slot of
** the file sourced as a namespace, or a global), apart from any variable or function ns. */
__attribute__((noinline)) static Value eval_nsref(Interp *I, AstNode *n) {
  Value *p = eval_name_place(I, n->kids[0]);
  Value ns = p ? *p : val_unbound();
  if (ns.t != VT_LIST) mls_throw(I, n->span, "'%s' is not a namespace (use source(\"file\") as %s)", n->u.sym->name, n->u.sym->name);
  int k = list_find(ns.u.l, n->sym2);
  if (k < 0) mls_throw(I, n->span, "'%s' not found in namespace '%s'", n->sym2->name, n->u.sym->name);
  val_retain(ns.u.l->items[k]);
  return ns.u.l->items[k];
}

__attribute__((noinline)) static Value eval_member(Interp *I, AstNode *n) {
  Value x = eval(I, n->kids[0]);
  if (x.t == VT_BOX) {                       /* a staged or traced value: its list */
    Value p = ad_concrete(I, x, n->span, "'$'");
    val_retain(p);
    val_release(x);
    x = p;
  }
  if (x.t != VT_LIST) {
    char d[64];
    val_describe(x, d, sizeof d);
    val_release(x);
    mls_throw(I, n->span, "'$' needs a list, got %s", d);
  }
  int k = list_find(x.u.l, n->u.sym);
  Value r = k >= 0 ? x.u.l->items[k] : val_null();
  val_retain(r);
  val_release(x);
  return r;
}

__attribute__((noinline)) static Value eval_massign(Interp *I, AstNode *n) {
  uint32_t nt = n->nkids - 1;
  Value v = eval(I, n->kids[nt]);
  char d[64];
  bool prefix = (n->flags & AST_F_DMLMULTI) && v.t == VT_LIST && v.u.l->multi && (uint32_t)v.u.l->n > nt;
  if ((n->flags & AST_F_DMLMULTI) && nt == 1 && !(v.t == VT_LIST && v.u.l->multi)) {   /* .dml: [x] = f(), one result */
    assign_name(I, n->kids[0], v);
    return val_null();
  }
  if (!prefix && (v.t != VT_LIST || (uint32_t)v.u.l->n != nt)) {   /* .dml: the first nt results */
    val_describe(v, d, sizeof d);
    val_release(v);
    mls_throw(I, n->span, "the right side of [...] = must give %u values, got %s", nt, d);
  }
  for (uint32_t i = 0; i < nt; i++) {
    Value x = v.u.l->items[i];
    val_retain(x);
    assign_name(I, n->kids[i], x);
  }
  val_release(v);
  return val_null();
}

/* The generic evaluator: hot node kinds inline, the rest in eval_misc (small frame).
** Nesting depth is bounded when parsing (ast.c), so the C recursion here is bounded too. */
static Value eval_any(Interp *I, AstNode *n) {
  switch (n->kind) {
  case AST_NUM: return val_num(n->u.num);
  case AST_NAME: return eval_name(I, n);
  case AST_BINARY: return eval_binary(I, n);
  case AST_UNARY: return eval_unary(I, n);
  case AST_CALL: return eval_call(I, n);
  case AST_INDEX: return eval_index(I, n);
  case AST_BLOCK: return eval_block(I, n);
  case AST_ASSIGN: return eval_assign(I, n);
  case AST_WHILE: return eval_while(I, n);
  case AST_IF: {
    bool t;
    if (evn_truth(I, n->kids[0], &t)) {
      if (t) return eval_branch(I, n->kids[1]);
      return n->nkids > 2 ? eval_branch(I, n->kids[2]) : val_null();
    }
    Value c = eval_operand(I, n->kids[0]);
    if (c.t == VT_BOX && I->stage && (n->flags & AST_F_VOID) && stage_select_ok(I, c)) {   /* (value unread) */
      tmp_push(I, c);
      bool done = if_select(I, n, c);
      tmp_pop(I, 1);
      if (done) { val_release(c); return val_null(); }
    }
    if (c.t == VT_BOOL) t = c.u.b;
    else {
      tmp_push(I, c);
      t = val_truth(I, c, n->kids[0]->span);
      tmp_pop(I, 1);
      val_release(c);
    }
    if (t) return eval_branch(I, n->kids[1]);
    return n->nkids > 2 ? eval_branch(I, n->kids[2]) : val_null();
  }
  default: return eval_misc(I, n);
  }
}

__attribute__((noinline)) static Value eval_misc(Interp *I, AstNode *n) {
  Value r;
  switch (n->kind) {
  case AST_BOOL: r = val_bool(n->u.num != 0); break;
  case AST_NULL: r = val_null(); break;
  case AST_STR: r = val_str(n->u.str.s, n->u.str.len); break;
  case AST_CLPARAM: r = eval_clparam(I, n); break;
  case AST_NSREF: r = eval_nsref(I, n); break;
  case AST_ANDAND: r = val_bool(scalar_truth(I, n->kids[0], "&&") && scalar_truth(I, n->kids[1], "&&")); break;
  case AST_OROR: r = val_bool(scalar_truth(I, n->kids[0], "||") || scalar_truth(I, n->kids[1], "||")); break;
  case AST_MEMBER: r = eval_member(I, n); break;
  case AST_MATRIX: r = eval_matrix(I, n); break;
  case AST_FUNCTION: r = closure_new(I, n->u.fn, I->env); break;
  case AST_RETURN: {
    Value v = n->nkids ? eval(I, n->kids[0]) : val_null();
    if (I->ctl) { r = v; break; }
    val_release(I->retval);
    I->retval = v;
    I->ctl = CTL_RETURN;
    r = val_null();
    break;
  }
  case AST_FOR: r = eval_for(I, n); break;
  case AST_BREAK: I->ctl = CTL_BREAK; r = val_null(); break;
  case AST_NEXT: I->ctl = CTL_NEXT; r = val_null(); break;
  case AST_MASSIGN: r = eval_massign(I, n); break;
  case AST_SOURCE_AS: {
    AstNode *call = n->kids[0];
    if (call->nkids != 2 || call->kids[1]->kind == AST_ARG)
      mls_throw(I, call->span, "source(path) as name takes one path");
    Value p = eval(I, call->kids[1]);
    tmp_push(I, p);
    if (p.t != VT_STR) mls_throw(I, call->kids[1]->span, "source() needs a file name (a string)");
    Value ns = interp_source(I, p.u.s->s, n->u.sym, call->span);
    tmp_pop(I, 1);
    val_release(p);
    assign_name(I, n->kids[1], ns);          /* "ns::", where the file (or function) keeps it */
    r = val_null();
    break;
  }
  default:
    mls_throw(I, n->span, "internal error: cannot evaluate a '%s' node", ast_kind_name(n->kind));
  }
  return r;
}

/* ---- specialized evaluators (closure compilation), chosen by eval_prepare ---- */
static Value ev_num(Interp *I, AstNode *n) { (void)I; return val_num(n->u.num); }

static Value ev_global(Interp *I, AstNode *n) {
  Value v = n->u.sym->global;
  if (v.t == VT_NUM && !I->stage) return v;
  return eval_name(I, n);
}

static Value ev_local0(Interp *I, AstNode *n) {
  Value v = I->env->slots[n->slot];
  if (v.t == VT_NUM && !I->stage) return v;
  return eval_name(I, n);
}

/* A number operand without a call when it is a literal or a global holding a number;
** otherwise evaluates k into *v (owned) and returns false unless that is a number. */
static inline bool num_operand(Interp *I, AstNode *k, double *x, Value *v) {
  if (k->kind == AST_NUM) { *x = k->u.num; return true; }
  if (k->kind == AST_NAME && k->slot < 0 && k->u.sym->global.t == VT_NUM && !I->stage) { *x = k->u.sym->global.u.n; return true; }
  *v = k->ev(I, k);
  if (v->t != VT_NUM) return false;
  *x = v->u.n;
  return true;
}

#define EV_ARITH(NAME, EXPR, MAKE)                                          \
  static Value NAME(Interp *I, AstNode *n) {                                \
    double x, y;                                                            \
    Value a, b;                                                             \
    if (!num_operand(I, n->kids[0], &x, &a)) return binary_slow(I, n, a, false, a); \
    if (!num_operand(I, n->kids[1], &y, &b)) return binary_slow(I, n, val_num(x), true, b); \
    double r = (EXPR);                                                      \
    if (!isfinite(r) && I->nan_check && isfinite(x) && isfinite(y))         \
      nan_check_fail(I, op_info[n->op].sym, n->span);                       \
    return MAKE(r);                                                         \
  }
EV_ARITH(ev_add, x + y, val_num)
EV_ARITH(ev_sub, x - y, val_num)
EV_ARITH(ev_mul, x * y, val_num)
EV_ARITH(ev_div, x / y, val_num)
EV_ARITH(ev_lt, x < y, val_bool)
EV_ARITH(ev_le, x <= y, val_bool)
EV_ARITH(ev_gt, x > y, val_bool)
EV_ARITH(ev_ge, x >= y, val_bool)
EV_ARITH(ev_eq, x == y, val_bool)
EV_ARITH(ev_ne, x != y, val_bool)
#undef EV_ARITH

static Value ev_assign_global(Interp *I, AstNode *n) {
  Value v = n->kids[1]->ev(I, n->kids[1]);
  Value *place = &n->kids[0]->u.sym->global;
  if (I->stage) {                            /* (recording it may fail: v is held meanwhile) */
    tmp_push(I, v);
    stage_assigned(I, place, n->kids[0]->u.sym, NULL);
    tmp_pop(I, 1);
  }
  if (v.t == VT_NUM && place->t == VT_NUM) { place->u.n = v.u.n; return v; }   /* I->ctl is clear: a number came back */
  if (I->ctl) return v;
  val_retain(v);
  store(place, v);
  return v;
}

/* Marks the ifs whose value nothing reads (AST_F_VOID): a block's statements but its last, and
** the last of a loop's body. */
static void mark_void(AstNode *s) {
  if (s && s->kind == AST_IF) s->flags |= AST_F_VOID;
  if (s && s->kind == AST_BLOCK && s->nkids > 0) mark_void(s->kids[s->nkids - 1]);
}

void eval_prepare(AstNode *n, Arena *a) {
  if (n->kind == AST_BLOCK)
    for (uint32_t i = 0; i + 1 < n->nkids; i++)
      if (n->kids[i]->kind == AST_IF) n->kids[i]->flags |= AST_F_VOID;
  if (n->kind == AST_FOR) mark_void(n->kids[2]);
  if (n->kind == AST_WHILE) mark_void(n->kids[1]);
  evn_prepare(n);
  if ((n->kind == AST_WHILE || n->kind == AST_FOR) && !(n->flags & AST_F_REMOTE)) n->loop = lp_build(n, a);
  switch (n->kind) {
  case AST_NUM: n->ev = ev_num; return;
  case AST_NAME: n->ev = n->slot < 0 ? ev_global : n->depth == 0 ? ev_local0 : eval_any; return;
  case AST_BINARY:
    switch (n->op) {
    case OP_ADD: n->ev = ev_add; return;
    case OP_SUB: n->ev = ev_sub; return;
    case OP_MUL: n->ev = ev_mul; return;
    case OP_DIV: n->ev = ev_div; return;
    case OP_LT: n->ev = ev_lt; return;
    case OP_LE: n->ev = ev_le; return;
    case OP_GT: n->ev = ev_gt; return;
    case OP_GE: n->ev = ev_ge; return;
    case OP_EQ: n->ev = ev_eq; return;
    case OP_NE: n->ev = ev_ne; return;
    default: n->ev = eval_binary; return;
    }
  case AST_ASSIGN: {
    mark_into(n);
    AstNode *t = n->kids[0];
    bool num = n->nkids == 2 && n->kids[1]->evn, cmp = num && is_cmp_node(n->kids[1]);
    if (t->kind == AST_NAME && t->slot < 0) n->ev = !num ? ev_assign_global : cmp ? ev_assign_global_bool : ev_assign_global_num;
    else if (t->kind == AST_NAME && t->depth == 0 && num) n->ev = cmp ? ev_assign_local0_bool : ev_assign_local0_num;
    else n->ev = eval_assign;
    return;
  }
  case AST_BLOCK: n->ev = eval_block; return;
  case AST_WHILE: n->ev = eval_while; return;
  case AST_CALL: n->ev = n->flags & AST_F_DMLFIRST ? eval_call_first : eval_call; return;
  default: n->ev = eval_any; return;
  }
}

/* ---- calls (call_value and the binding of arguments: call.c) ---- */
static bool is_fn(Value v) { return v.t == VT_FUNC || v.t == VT_BUILTIN; }

/* As R: a call skips variables that are not functions, looking outward, then builtins. */
/* The function at place p (+1); while staging, runs of the graph check it is still there. */
static Value fn_at(Interp *I, AstNode *f, Value *p) {
  if (I->stage) return staged_read(I, f, p);
  val_retain(*p);
  return *p;
}

static Value lookup_function(Interp *I, AstNode *f) {
  if (f->kind != AST_NAME) return eval(I, f);
  Value *p = f->flags & AST_F_OWNFN ? NULL : lookup_place(I, f);   /* (a .dml namespace: builtins only) */
  if (p && is_fn(*p)) return fn_at(I, f, p);
  for (Env *e = I->env; p && e; e = e->parent)
    for (int i = 0; i < e->n; i++)
      if (e->fi->slots[i] == f->u.sym && is_fn(e->slots[i])) return fn_at(I, f, &e->slots[i]);
  if (p && is_fn(f->u.sym->global)) return fn_at(I, f, &f->u.sym->global);
  if (f->u.sym->bi) { Value v; v.t = VT_BUILTIN; v.u.bi = f->u.sym->bi; return v; }
  Value lf = interp_lib_function(I, f->u.sym, f->span);      /* stdlib/builtin/NAME.mls */
  if (lf.t != VT_UNBOUND) return lf;
  if (p) {
    char d[64];
    mls_throw(I, f->span, "'%s' is not a function (it is %s)", f->u.sym->name, val_describe(*p, d, sizeof d));
  }
  char near[256];
  interp_suggest(I, f->u.sym->name, near, sizeof near);
  mls_throw(I, f->span, "could not find function '%s'%s", f->u.sym->name, near);
}

static bool param_given(Interp *I, Symbol *s) {
  for (int i = 0; i < I->nparams; i++)
    if (I->params[i].name == s) return true;
  return false;
}

/* x = f(...) in a .dml file (AST_F_DMLFIRST): of a call giving several results, the first, as
** SystemDS assigns it (PCA.dml's A = scale(A, ...)); any other value as it is. */
static Value eval_call_first(Interp *I, AstNode *n) {
  Value v = eval_call(I, n);
  if (v.t != VT_LIST || !v.u.l->multi || v.u.l->n < 1 || I->ctl) return v;
  Value x = v.u.l->items[0];
  val_retain(x);
  val_release(v);
  return x;
}

/* Whether argument node a is R's ... (the dots of the running function, spliced in). */
static bool is_dots(const AstNode *a) { return a->kind == AST_NAME && a->u.sym->len == 3 && !strcmp(a->u.sym->name, "..."); }

/* f(x, ...): the arguments evaluated in order, a ... replaced by the dots list's items with
** their names, then the call (fn on the tmp stack at mark - 1 .. : released here). */
__attribute__((noinline)) static Value eval_call_dots(Interp *I, AstNode *n, Value fn, int mark) {
  List *l = list_new(I, (int)n->nkids);
  tmp_push(I, val_list(l));
  for (uint32_t i = 1; i < n->nkids; i++) {
    AstNode *a = n->kids[i];
    Symbol *nm = NULL;
    if (a->kind == AST_ARG) {
      if (a->flags & AST_F_EMPTY) mls_throw(I, a->span, "argument '%s' has no value (only switch() takes an empty alternative)", a->u.sym->name);
      nm = a->u.sym;
      a = a->kids[0];
    }
    Value v = eval(I, a);
    if (I->ctl) { val_release(v); tmp_release_to(I, mark); return val_null(); }
    if (!nm && is_dots(a)) {
      if (v.t != VT_LIST) { val_release(v); mls_throw(I, a->span, "'...' used in an incorrect context (a function's ... parameter)"); }
      for (int k = 0; k < v.u.l->n; k++) {
        val_retain(v.u.l->items[k]);
        list_push(l, v.u.l->items[k], v.u.l->names ? v.u.l->names[k] : NULL);
      }
      val_release(v);
      continue;
    }
    list_push(l, v, nm);
  }
  int nargs = l->n;
  Symbol *names[nargs > 0 ? nargs : 1];
  Value args[nargs > 0 ? nargs : 1];
  for (int i = 0; i < nargs; i++) {
    names[i] = l->names ? l->names[i] : NULL;
    args[i] = l->items[i];
  }
  Value r = call_value(I, fn, nargs, args, names, n->span);
  tmp_release_to(I, mark);
  return r;
}

__attribute__((noinline)) static Value eval_call(Interp *I, AstNode *n) {
  int mark = I->ntmp;
  Value fn = lookup_function(I, n->kids[0]);
  tmp_push(I, fn);
  int nargs = (int)n->nkids - 1;
  for (int i = 0; i < nargs; i++)
    if (is_dots(n->kids[i + 1]) && !(fn.t == VT_BUILTIN && (fn.u.bi->flags & BI_LAZY))) return eval_call_dots(I, n, fn, mark);
  if (nargs > 1000) mls_throw(I, n->span, "too many arguments (%d)", nargs);
  if (fn.t == VT_BUILTIN && (fn.u.bi->flags & BI_IFDEF) && nargs == 2 &&
      n->kids[1]->kind == AST_CLPARAM && !param_given(I, n->kids[1]->u.sym)) {
    tmp_pop(I, 1);
    return eval(I, n->kids[2]);
  }
  if (fn.t == VT_BUILTIN && (fn.u.bi->flags & BI_LAZY)) {
    Args la;
    memset(&la, 0, sizeof la);
    la.span = n->span;
    la.nodes = n->kids + 1;
    la.nnodes = nargs;
    Span saved = I->call_span;
    const Builtin *saved_bi = I->cur_bi;
    I->call_span = n->span;
    I->cur_bi = fn.u.bi;
    Value r = fn.u.bi->fn(I, &la);
    I->call_span = saved;
    I->cur_bi = saved_bi;
    tmp_release_to(I, mark);
    if (I->interrupted) { val_release(r); interp_check_interrupt(I, n->span); }   /* as bi_call */
    return r;
  }
  Symbol *names[nargs > 0 ? nargs : 1];      /* nargs <= 1000: a small VLA */
  int base = I->ntmp;
  for (int i = 0; i < nargs; i++) {
    AstNode *a = n->kids[i + 1];
    if (a->kind == AST_ARG) {
      if (a->flags & AST_F_EMPTY) mls_throw(I, a->span, "argument '%s' has no value (only switch() takes an empty alternative)", a->u.sym->name);
      names[i] = a->u.sym;
      a = a->kids[0];
    } else names[i] = NULL;
    Value v = eval(I, a);
    tmp_push(I, v);
    if (I->ctl) { tmp_release_to(I, mark); return val_null(); }
  }
  /* the callee gets a copy: a tmp_push of its own may move the temp stack (which still holds
  ** the references) while it reads its arguments (fuzz_eval: grad of a function calling grad) */
  Value args[nargs > 0 ? nargs : 1];
  memcpy(args, &I->tmp[base], (size_t)nargs * sizeof(Value));
  Value r;
  /* exp(-x): the argument is ours, dropped after, lent to the op. Not a box: bi_call unwraps a
  ** box of an ended tape to the matrix it holds, whose one reference is that box, still in a
  ** variable. */
  if (fn.t == VT_BUILTIN && !(fn.u.bi->flags & BI_EVAL) && nargs == 1 && !names[0] && fn.u.bi->op != OP_NONE &&
      (op_info[fn.u.bi->op].flags & OPF_EW) && args[0].t == VT_MAT)
    r = bi_call_lent(I, fn.u.bi, nargs, args, names, true, n->span);
  else r = call_value(I, fn, nargs, args, names, n->span);
  tmp_release_to(I, mark);
  return r;
}

/* ---- indexing: the family itself, on evaluated values, is ops/index.c ---- */
/* X[i] in a .dml file is DML's X[i, ] on a matrix with more than one column (a column vector
** keeps the single index, which there selects the same element). */
static bool dml_row_index(const AstNode *n, Value x) {
  if (!(n->flags & AST_F_DMLROW)) return false;
  x = ad_primal(x);
  return x.t == VT_MAT && tensor_cols(x.u.m) != 1;
}

/* a:(a + len) as a + (0:len): the same values op_range makes (from + i), as a vector whose
** length is fixed while a is a staged value (stage_fixed_offset). Owned. */
static Value fixed_range(Interp *I, Value a, int64_t len, Span sp) {
  Tensor *t = tensor_new_on(I, I->cpu, len + 1, 1);
  double *d = tensor_data(t);
  for (int64_t i = 0; i <= len; i++) d[i] = (double)i;
  tmp_push(I, val_mat(t));
  Value r = op_binary(I, OP_ADD, a, val_mat(t), sp);
  tmp_pop(I, 1);
  tensor_free_ref(t);
  return r;
}

/* x[i] of a vector with names: i may also be a name or a list of names (c("a", "b")), and the
** elements keep their names, as R (a single element too: a 1x1 matrix then, not a number).
** x[i, j] reads as without names and drops them. Releases the temp stack to mark. */
__attribute__((noinline)) static Value index_named(Interp *I, Value x, int nuse, Value *iv, unsigned ranges, AstNode *n, int mark) {
  names_unstaged(I, n->span);
  x = ad_primal(x);
  const TensorNames *nm = x.u.m->names;
  if (nuse != 1) {
    Value r = index_read_ranges(I, x, nuse, iv, ranges, n->span);
    tmp_release_to(I, mark);
    return r;
  }
  Value k = iv[0];
  bool strs = k.t == VT_STR || (k.t == VT_LIST && k.u.l->n > 0);
  for (int i = 0; k.t == VT_LIST && i < k.u.l->n; i++) strs = strs && k.u.l->items[i].t == VT_STR;
  if (strs) {                                        /* names to positions */
    int64_t m = k.t == VT_STR ? 1 : k.u.l->n;
    Tensor *pos = tensor_new_host(I, m, 1);
    tmp_push(I, val_mat(pos));
    for (int64_t i = 0; i < m; i++) {
      const char *want = k.t == VT_STR ? k.u.s->s : k.u.l->items[i].u.s->s;
      int64_t at = -1;
      for (int64_t j = 0; j < nm->n && at < 0; j++)
        if (!strcmp(nm->s[j], want)) at = j;
      if (at < 0) mls_throw(I, n->kids[1] ? n->kids[1]->span : n->span, "no element named '%s' (R would give NA)", want);
      tensor_data(pos)[i] = (double)(at + 1);
    }
    iv[0] = val_mat(pos);
  }
  AstNode *k1 = n->kids[1];                          /* x[[i]]: an element without its name */
  bool dbl = k1 && k1->kind == AST_MATRIX && k1->nkids == 1 && k1->kids[0]->nkids == 1 && !(k1->flags & AST_F_PAREN);
  if (dbl) {
    Value r = index_read_ranges(I, x, nuse, iv, ranges, n->span);
    tmp_release_to(I, mark);
    return r;
  }
  Value r = index_read_ranges(I, x, 1, iv, ranges, n->span);
  tmp_push(I, r);
  int64_t len = tensor_numel(x.u.m);                 /* which elements: the same index of 1..n */
  Tensor *ord = tensor_new_host(I, tensor_rows(x.u.m), tensor_cols(x.u.m));
  tmp_push(I, val_mat(ord));
  for (int64_t j = 0; j < len; j++) tensor_data(ord)[j] = (double)(j + 1);
  Value which = index_read_ranges(I, val_mat(ord), 1, iv, ranges, n->span);
  tmp_push(I, which);
  int64_t m = which.t == VT_MAT ? tensor_numel(which.u.m) : 1;
  if (r.t == VT_NUM || r.t == VT_BOOL) {             /* one element: a 1x1 matrix, to hold its name */
    Tensor *one = tensor_new(I, 1, 1);
    tensor_data(one)[0] = r.t == VT_NUM ? r.u.n : r.u.b;
    one->logical = r.t == VT_BOOL;
    r = val_mat(one);
  } else val_retain(r);
  const char **s = mem_alloc((size_t)(m > 0 ? m : 1) * sizeof *s);   /* (nothing throws from here) */
  for (int64_t i = 0; i < m; i++) {
    double p = which.t == VT_MAT ? tensor_at(which.u.m, i) : which.u.n;
    s[i] = nm->s[(int64_t)p - 1];
  }
  TensorNames *rn = tnames_new(m, s, NULL);
  mem_free(s);
  tmp_release_to(I, mark);
  if (r.t == VT_MAT && r.u.m->refcount == 1) tensor_set_names(r.u.m, rn);
  tnames_release(rn);
  return r;
}

__attribute__((noinline)) static Value eval_index(Interp *I, AstNode *n) {
  int mark = I->ntmp;
  Value x = eval(I, n->kids[0]);
  tmp_push(I, x);
  uint32_t nix = n->nkids - 1;
  uint32_t nuse = dml_row_index(n, x) ? 2 : nix;     /* DML's X[i] = X[i, ] */
  Value iv[2] = { val_unbound(), val_unbound() };
  unsigned ranges = 0;                               /* the fixed-length ranges among them */
  for (uint32_t i = 0; i < nix; i++) {
    AstNode *k = n->kids[i + 1];
    if (!k) continue;
    if (k->kind == AST_BINARY && k->op == OP_RANGE && nix <= 2) {   /* a:b: its ends first */
      Value a = eval(I, k->kids[0]);
      tmp_push(I, a);
      Value b = eval(I, k->kids[1]);
      tmp_push(I, b);
      index_range_precheck(I, x, (int)nuse, (int)i, a, b, n->span);
      double len;
      if (I->stage && stage_fixed_offset(I, a, b, &len) && len >= 2 && len < 1e9 && len == floor(len)) {
        iv[i] = fixed_range(I, a, (int64_t)len, k->span);   /* a slice at a traced offset */
        ranges |= 1u << i;
      } else
        iv[i] = op_binary(I, OP_RANGE, a, b, k->span);
    } else {
      iv[i] = eval(I, k);
    }
    tmp_push(I, iv[i]);
  }
  if (has_names(x)) return index_named(I, x, (int)nuse, iv, ranges, n, mark);
  if (nix == 2 && !ranges && lend_target(I, n->kids[0], x, I->ntmp - mark)) {   /* X = X[perm, ]: X's rows permuted */
    Value r = index_permute_rows(I, x.u.m, iv[0], n->span) ? (x.u.m->refcount++, x) : index_read(I, x, 2, iv, n->span);
    tmp_release_to(I, mark);                 /* (x's reference is the variable's now) */
    return r;
  }
  Value r = index_read_ranges(I, x, (int)nuse, iv, ranges, n->span);
  tmp_release_to(I, mark);
  return r;
}

/* ---- assignment ---- */
/* Writes rhs into the selection of matrix *place (copy-on-write), X[i, j] = v of index node
** ixnode: its indices iv evaluated (index_assign may overwrite them). */
static void assign_matrix_index(Interp *I, Value *place, AstNode *ixnode, Value *iv, Value rhs) {
  Span sp = ixnode->span;
  uint32_t nix = ixnode->nkids - 1;
  if (dml_row_index(ixnode, *place)) nix = 2;          /* DML's X[i] = v is X[i, ] = v */
  index_assign(I, place, nix, iv, rhs, sp);
}

/* Makes *place a list only this place holds (copy-on-write); NULL/unbound become empty. */
static List *own_list(Interp *I, Value *place, Span sp) {
  if (place->t == VT_UNBOUND || place->t == VT_NULL) { store(place, val_list(list_new(I, 4))); return place->u.l; }
  if (place->t != VT_LIST) {
    char d[64];
    mls_throw(I, sp, "'$' assignment needs a list, got %s", val_describe(*place, d, sizeof d));
  }
  if (place->u.l->refcount > 1) store(place, val_list(list_copy(I, place->u.l)));
  place->u.l->multi = false;
  return place->u.l;
}

/* Assigns rhs (borrowed) along the chain of index/member nodes chain[0..n), rooted at place. */
static void assign_path(Interp *I, Value *place, AstNode **chain, int n, Value **ivs, Value rhs) {
  AstNode *lv = chain[0];
  if (lv->kind == AST_MEMBER) {
    List *l = own_list(I, place, lv->span);
    int k = list_find(l, lv->u.sym);
    if (k < 0) { list_push(l, val_null(), lv->u.sym); k = l->n - 1; }
    if (n == 1) { val_retain(rhs); store(&l->items[k], rhs); return; }
    assign_path(I, &l->items[k], chain + 1, n - 1, ivs + 1, rhs);
    return;
  }
  /* AST_INDEX */
  if (place->t == VT_LIST) {
    Value k = ivs[0][0];
    if (lv->nkids != 2 || k.t == VT_UNBOUND) mls_throw(I, lv->span, "a list takes one index: L[k] = v");
    List *l = own_list(I, place, lv->span);
    int pos = -1;
    k = ad_concrete(I, k, lv->span, "a list index");
    if (k.t == VT_STR) {
      for (int i = 0; l->names && i < l->n; i++)
        if (l->names[i] && strcmp(l->names[i]->name, k.u.s->s) == 0) pos = i;
      if (pos < 0) { list_push(l, val_null(), sym_intern(&I->syms, k.u.s->s, k.u.s->len)); pos = l->n - 1; }
    } else {
      double d = val_to_num(I, k, lv->span, "a list index");
      if (!(d >= 1 && d < (double)l->n + 2)) mls_throw(I, lv->span, "index %g out of bounds for a list of %d", d, l->n);
      pos = (int)d - 1;
      if (pos == l->n) list_push(l, val_null(), NULL);
    }
    if (n == 1) { val_retain(rhs); store(&l->items[pos], rhs); return; }
    assign_path(I, &l->items[pos], chain + 1, n - 1, ivs + 1, rhs);
    return;
  }
  if (n != 1) mls_throw(I, lv->span, "only a list element can be indexed further in an assignment");
  if (place->t == VT_MAT && place->u.m->names && lv->nkids == 2 && ivs[0][0].t == VT_STR) {   /* x["b"] = v */
    const TensorNames *nm = place->u.m->names;
    int64_t at = -1;
    for (int64_t j = 0; j < nm->n && at < 0; j++)
      if (!strcmp(nm->s[j], ivs[0][0].u.s->s)) at = j;
    if (at < 0) mls_throw(I, lv->kids[1] ? lv->kids[1]->span : lv->span, "no element named '%s' (R would add one)", ivs[0][0].u.s->s);
    ivs[0][0] = val_num((double)(at + 1));           /* (the string stays held by the caller's temp stack) */
  }
  assign_matrix_index(I, place, lv, ivs[0], rhs);
}

static Value eval_assign_path(Interp *I, AstNode *n, Value v);

static Value eval_assign(Interp *I, AstNode *n) {
  AstNode *lhs = n->kids[0];
  Value v = eval_operand(I, n->kids[1]);
  if (I->ctl) return v;
  if (lhs->kind != AST_NAME) return eval_assign_path(I, n, v);
  if (I->stage) tmp_push(I, v);               /* the statement's reference, held (assign_name) */
  val_retain(v);
  assign_name(I, lhs, v);
  if (I->stage) tmp_pop(I, 1);
  return v;
}

/* X[i, j] = v, L$a$b = v, ...: v is owned; returned (owned) as the statement's value. */
__attribute__((noinline)) static Value eval_assign_path(Interp *I, AstNode *n, Value v) {
  AstNode *lhs = n->kids[0];
  int mark = I->ntmp;
  tmp_push(I, v);
  AstNode *chain[64];
  int depth = 0;
  AstNode *root = lhs;
  while (root->kind == AST_INDEX || root->kind == AST_MEMBER) {
    if (depth == 64) mls_throw(I, lhs->span, "assignment target nested too deeply");
    chain[depth++] = root;
    root = root->kids[0];
  }
  for (int i = 0; i < depth / 2; i++) { AstNode *t = chain[i]; chain[i] = chain[depth - 1 - i]; chain[depth - 1 - i] = t; }
  Value ivals[64][2];
  Value *ivs[64];
  for (int i = 0; i < depth; i++) {            /* every index is evaluated before anything changes */
    ivs[i] = ivals[i];
    ivals[i][0] = ivals[i][1] = val_unbound();
    if (chain[i]->kind != AST_INDEX) continue;
    for (uint32_t k = 1; k < chain[i]->nkids; k++) {
      if (!chain[i]->kids[k]) continue;
      ivals[i][k - 1] = eval(I, chain[i]->kids[k]);
      tmp_push(I, ivals[i][k - 1]);
    }
  }
  Value *place = lookup_place(I, root);
  Value cur = val_unbound();
  if (place && I->stage) {
    /* While staging, the target is read as the block's input before it is written: X[i] = v
    ** updates the value X holds when the graph runs, not the one it held when traced (a list
    ** makes the block eager: its items are not graph values). */
    cur = staged_read(I, root, place);
    tmp_push(I, cur);
  }
  if (root->slot >= 0 && place != assign_place(I, root)) {
    /* R semantics: modifying an outer variable inside a function makes a local copy */
    Value *local = assign_place(I, root);
    if (place) {
      Value x = cur.t != VT_UNBOUND ? cur : *place;
      val_retain(x);
      store(local, x);
    }
    place = local;
  } else if (cur.t != VT_UNBOUND) {
    val_retain(cur);
    store(place, cur);
  }
  if (!place) {
    if (chain[0]->kind == AST_MEMBER) place = assign_place(I, root);
    else {
      char near[256];
      interp_suggest(I, root->u.sym->name, near, sizeof near);
      mls_throw(I, root->span, "object '%s' not found%s", root->u.sym->name, near);
    }
  }
  if (I->stage) {                              /* a staged block's output */
    Env *e = NULL;
    if (place != &root->u.sym->global)
      for (e = I->env; e && !(place >= e->slots && place < e->slots + e->n); e = e->parent) {}
    stage_assigned(I, place, root->u.sym, e);
  }
  assign_path(I, place, chain, depth, ivs, v);
  tmp_release_to(I, mark + 1);
  tmp_pop(I, 1);
  return v;
}

/* ---- top level ---- */
Value eval_chunk(Interp *I, Chunk *ch, bool echo) {
  AstNode *root = ch->root;
  Value last = val_null();
  Span saved_call = I->call_span;
  for (uint32_t i = 0; i < root->nkids; i++) {          /* a .dml file's functions, first */
    AstNode *s = root->kids[i];
    if (!(s->flags & AST_F_HOISTED)) continue;
    I->call_span = s->span;
    val_release(eval(I, s));
  }
  for (uint32_t i = 0; i < root->nkids; i++) {
    AstNode *s = root->kids[i];
    val_release(last);
    last = val_null();
    if (s->flags & AST_F_HOISTED) continue;
    gc_maybe(I);
    if (!echo && staging_blocks(I) && stageable(I, s)) {   /* --staged */
      val_release(run_staged(I, root->kids, root->nkids, &i));
      i--;
      last = val_null();
      if (I->ctl) { I->ctl = CTL_NONE; last = I->retval; I->retval = val_null(); break; }
      if (I->interrupted) interp_check_interrupt(I, s->span);
      continue;
    }
    I->call_span = s->span;                   /* where an error outside any call is reported */
    last = eval(I, s);
    if (I->interrupted) { val_release(last); interp_check_interrupt(I, s->span); }   /* nothing after it runs */
    if (I->ctl) {                             /* return() at top level ends the script */
      I->ctl = CTL_NONE;
      val_release(last);
      last = I->retval;
      I->retval = val_null();
      break;
    }
    bool expr_stmt = s->kind != AST_ASSIGN && s->kind != AST_MASSIGN && s->kind != AST_FOR &&
                     s->kind != AST_WHILE && s->kind != AST_SOURCE_AS;
    if (echo && expr_stmt && last.t != VT_NULL && last.t != VT_UNBOUND) {
      bool invisible = s->kind == AST_CALL && s->kids[0]->kind == AST_NAME && s->kids[0]->u.sym->bi &&
                       (s->kids[0]->u.sym->bi->flags & BI_INVISIBLE) && s->kids[0]->u.sym->global.t == VT_UNBOUND;
      if (!invisible) {
        TextBuf t;
        tb_open(I, &t);
        fmt_display(I, &t, last, I->print_digits, true);
        if (I->interrupted) { val_release(last); interp_check_interrupt(I, s->span); }   /* (t: a deferred free) */
        if (I->echo) I->echo(I, last, t.p, t.n, I->display_ctx);
        else fprintf(I->out, "%s\n", t.p);
        tb_close(I, &t);
        val_retain(last);
        store(&I->last, last);
        Symbol *ans = sym_intern(&I->syms, "ans", 3);
        val_retain(last);
        store(&ans->global, last);
      }
    }
  }
  I->call_span = saved_call;
  if (I->interrupted && root->nkids > 0) {    /* a signal during the last statement's tail */
    val_release(last);
    interp_check_interrupt(I, root->kids[root->nkids - 1]->span);
  }
  return last;
}
