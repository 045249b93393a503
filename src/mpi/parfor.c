/*
** parfor.c — parfor (i in a:b, mode=REMOTE) over the MPI ranks (issue 14, docs/mpi.md). The
** iterations are cut into N contiguous blocks in rank order; each rank runs its block, then the
** results are merged so every rank holds what a plain for would have left (DML's result merge):
**   - a matrix written by left indexing in the body (X[i, ] = ...) that existed before the loop:
**     every rank's copy is gathered and each cell takes the value of a rank that changed it
**     (compared bitwise with the value before the loop; ranks in order, the last one wins);
**   - any other variable assigned in the body (and the loop variable): the value of the rank
**     that ran the last iteration (numbers, booleans, strings and matrices; others stay local).
** Iterations must be independent (as DML's parfor requires): one may not read another's result.
*/
#include <string.h>
#include "mem.h"
#include "mpi/mpi.h"
#include "tensor.h"

bool mpi_in_parfor(const Interp *I) { return I->parfor_depth > 0; }

/* ---- the variables a loop body assigns ---- */
typedef void (*TargetFn)(Interp *I, AstNode *name, bool indexed, ParforRun *pr);

static void walk(Interp *I, AstNode *n, TargetFn f, ParforRun *pr) {
  if (!n || n->kind == AST_FUNCTION) return;      /* a function's body runs elsewhere */
  if (n->kind == AST_ASSIGN) {
    AstNode *l = n->kids[0];
    bool indexed = false;
    while (l->kind == AST_INDEX || l->kind == AST_MEMBER) { l = l->kids[0]; indexed = true; }
    if (l->kind == AST_NAME) f(I, l, indexed, pr);
  } else if (n->kind == AST_MASSIGN) {
    for (uint32_t i = 0; i + 1 < n->nkids; i++) if (n->kids[i]->kind == AST_NAME) f(I, n->kids[i], false, pr);
  } else if (n->kind == AST_FOR) {
    f(I, n->kids[0], false, pr);
  }
  for (uint32_t i = 0; i < n->nkids; i++) walk(I, n->kids[i], f, pr);
}

/* begin: an indexed target holding a matrix is a result (its value now is kept to compare);
** everything else is a plain variable. A name is listed once, in the first list it reaches. */
static void note_target(Interp *I, AstNode *name, bool indexed, ParforRun *pr) {
  List *res = pr->snap->items[0].u.l, *plain = pr->snap->items[1].u.l;
  Symbol *s = name->u.sym;
  if (list_find(res, s) >= 0) return;
  Value *p = eval_name_place(I, name);
  if (indexed && p && p->t == VT_MAT) {
    int k = list_find(plain, s);
    if (k >= 0) plain->names[k] = NULL;           /* indexed somewhere: a result after all */
    val_retain(*p);
    list_push(res, *p, s);
    return;
  }
  if (list_find(plain, s) < 0) list_push(plain, val_bool(true), s);
}

static void bcast_or_throw_shape(Interp *I, bool ok, Span sp, const char *name) {
  double mine = ok ? 1 : 0;
  int n = mpi_size();
  double *all = mem_alloc((size_t)n * sizeof(double));
  mpi_allgather_doubles(I, &mine, 1, all, sp);
  for (int r = 0; r < n; r++)
    if (all[r] == 0) {
      mem_free(all);
      mls_throw(I, sp, "parfor (mode=REMOTE): the result '%s' is no longer a matrix of its shape before the "
                "loop on rank %d", name, r + 1);
    }
  mem_free(all);
}

/* end: merge result k (name node) */
static void merge_result(Interp *I, AstNode *name, Tensor *orig, Span sp) {
  Value *p = eval_name_place(I, name);
  bool ok = p && p->t == VT_MAT && tensor_rows(p->u.m) == tensor_rows(orig) && tensor_cols(p->u.m) == tensor_cols(orig);
  bcast_or_throw_shape(I, ok, sp, name->u.sym->name);
  int mark = I->ntmp;
  int64_t n = tensor_numel(orig);
  int nr = mpi_size();
  Tensor *mine = tensor_contiguous(I, p->u.m);
  tmp_push(I, val_mat(mine));
  Tensor *S = tensor_contiguous(I, orig);
  tmp_push(I, val_mat(S));
  Tensor *all = tensor_new(I, nr, n);
  tmp_push(I, val_mat(all));
  mpi_allgather_doubles(I, tensor_data(mine), n, tensor_data(all), sp);
  Tensor *R = tensor_clone(I, S);
  tmp_push(I, val_mat(R));
  const double *s = tensor_data(S), *a = tensor_data(all);
  double *o = tensor_data(R);
  for (int r = 0; r < nr; r++)
    for (int64_t i = 0; i < n; i++)
      if (memcmp(&a[(int64_t)r * n + i], &s[i], sizeof(double)) != 0) o[i] = a[(int64_t)r * n + i];
  R->refcount++;
  tmp_release_to(I, mark);
  eval_assign_name(I, name, val_mat(R));
}

/* end: the plain variable's value of the last rank (the one that ran the last iteration) */
static void share_plain(Interp *I, AstNode *name, Span sp) {
  int last = mpi_size() - 1;
  Value *p = eval_name_place(I, name);
  bool ok = p && (p->t == VT_NUM || p->t == VT_BOOL || p->t == VT_STR || p->t == VT_MAT);
  Value f = mpi_bcast_value(I, val_num(ok ? 1 : 0), last, true, sp);
  if (f.u.n == 0) return;                          /* not sendable there: each keeps its own */
  Value v = mpi_bcast_value(I, ok ? *p : val_num(0), last, true, sp);
  eval_assign_name(I, name, v);
}

static void finish_target(Interp *I, AstNode *name, bool indexed, ParforRun *pr) {
  (void)indexed;
  List *res = pr->snap->items[0].u.l, *plain = pr->snap->items[1].u.l;
  Symbol *s = name->u.sym;
  int k = list_find(res, s);
  if (k >= 0) {
    if (res->items[k].t != VT_MAT) return;         /* done already */
    Value orig = res->items[k];
    res->items[k] = val_null();
    tmp_push(I, orig);                             /* released with the mark below */
    merge_result(I, name, orig.u.m, pr->loop->span);
    tmp_pop(I, 1);
    val_release(orig);
    return;
  }
  k = list_find(plain, s);
  if (k < 0 || plain->items[k].t != VT_BOOL) return;
  plain->items[k] = val_null();
  share_plain(I, name, pr->loop->span);
}

bool mpi_parfor_begin(Interp *I, AstNode *n, int64_t cnt, int64_t *lo, int64_t *hi, ParforRun *pr) {
  if (mpi_size() == 1 || I->parfor_depth > 0) return false;
  mpi_check_count(I, cnt, n->span);
  int64_t N = mpi_size(), r = mpi_rank();
  *lo = cnt * r / N;
  *hi = cnt * (r + 1) / N;
  pr->loop = n;
  pr->cnt = cnt;
  pr->snap = list_new(I, 2);
  tmp_push(I, val_list(pr->snap));
  list_push(pr->snap, val_list(list_new(I, 4)), NULL);
  list_push(pr->snap, val_list(list_new(I, 4)), NULL);
  walk(I, n->kids[2], note_target, pr);
  I->parfor_depth++;
  return true;
}

void mpi_parfor_end(Interp *I, ParforRun *pr) {
  I->parfor_depth--;
  if (pr->cnt > 0) {
    walk(I, pr->loop->kids[2], finish_target, pr);
    share_plain(I, pr->loop->kids[0], pr->loop->span);   /* the loop variable: its last value */
  }
  tmp_pop(I, 1);
  val_release(val_list(pr->snap));
}

l_noret mpi_parfor_stop(Interp *I, ParforRun *pr, Span sp) {
  I->parfor_depth--;
  (void)pr;
  mls_throw(I, sp, "break or return inside parfor (mode=REMOTE): its iterations run on different ranks");
}
