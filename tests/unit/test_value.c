/*
** test_value.c — unit tests of values, lists, symbols and tensors (src/value.c, sym.c,
** tensor.c): refcounts, list operations, shapes and strides, copy-on-write and clean OOM.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag.h"
#include "err.h"
#include "interp/interp.h"
#include "capture.h"
#include "mem.h"
#include "sym.h"
#include "tensor.h"
#include "value.h"

/* ---- fixtures: a fresh interpreter per test, output captured ---- */




/* Runs code on the fixture's interpreter; f->out / f->err hold what it printed. */
static int run(Fix *f, const char *code) {
  return run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
}

static void run_ok(Fix *f, const char *code) {
  int st = run(f, code);
  if (st != 0) print_error("'%s' failed (%d): %s\n", code, st, f->err);
  assert_int_equal(st, 0);
}

/* ---- strings ---- */

static void test_str_refcount(void **state) {
  Value s = val_cstr("hello");
  assert_int_equal(s.t, VT_STR);
  assert_true(val_is_heap(s));
  assert_int_equal(s.u.s->refcount, 1);
  assert_int_equal(s.u.s->len, 5);
  assert_string_equal(s.u.s->s, "hello");
  val_retain(s);
  assert_int_equal(s.u.s->refcount, 2);
  Value t = s;                       /* a second owner */
  val_release(s);
  assert_int_equal(t.u.s->refcount, 1);
  assert_string_equal(t.u.s->s, "hello");
  val_release(t);                    /* frees: valgrind/ASan prove it */

  Value e = val_str("ab\0cd", 5);    /* length-counted: an embedded NUL is kept */
  assert_int_equal(e.u.s->len, 5);
  assert_int_equal(e.u.s->s[3], 'c');
  assert_int_equal(e.u.s->s[5], '\0');
  val_release(e);
}

static void test_unboxed_values(void **state) {
  Value n = val_num(2.5), b = val_bool(true), z = val_null(), u = val_unbound();
  assert_false(val_is_heap(n));
  assert_false(val_is_heap(b));
  assert_false(val_is_heap(z));
  assert_false(val_is_heap(u));
  val_retain(n);                     /* no-ops on unboxed values */
  val_release(n);
  val_release(b);
  assert_true(n.u.n == 2.5);
  assert_true(b.u.b);
  assert_int_equal(u.t, VT_UNBOUND);
  assert_string_equal(val_type_name(n), "number");
  assert_string_equal(val_type_name(b), "boolean");
  assert_string_equal(val_type_name(z), "NULL");
  Value s = val_cstr("x");
  assert_string_equal(val_type_name(s), "string");
  char buf[64];
  assert_string_equal(val_describe(s, buf, sizeof buf), "a string");
  assert_string_equal(val_describe(z, buf, sizeof buf), "NULL");
  assert_string_equal(val_describe(n, buf, sizeof buf), "a number");
  val_release(s);
}

/* ---- lists ---- */

static void test_list_push_find(void **state) {
  Fix *f = *state;
  SymTab *st = &f->I->syms;
  Symbol *a = sym_intern(st, "a", 1), *b = sym_intern(st, "b", 1), *c = sym_intern(st, "c", 1);
  List *l = list_new(f->I, 0);
  assert_int_equal(l->refcount, 1);
  assert_int_equal(l->n, 0);
  assert_true(l->cap > 0);
  assert_null(l->names);
  assert_int_equal(list_find(l, a), -1);
  /* unnamed items first: names are allocated only when a name arrives */
  list_push(l, val_num(1), NULL);
  list_push(l, val_num(2), NULL);
  assert_null(l->names);
  assert_int_equal(list_find(l, a), -1);
  list_push(l, val_cstr("x"), a);
  assert_non_null(l->names);
  assert_null(l->names[0]);
  assert_null(l->names[1]);
  /* grow well past the initial capacity, names included */
  for (int i = 0; i < 20; i++) list_push(l, val_num(10 + i), NULL);
  list_push(l, val_num(99), b);
  assert_int_equal(l->n, 24);
  assert_true(l->cap >= 24);
  assert_int_equal(list_find(l, a), 2);
  assert_int_equal(list_find(l, b), 23);
  assert_int_equal(list_find(l, c), -1);
  assert_true(l->items[0].u.n == 1);
  assert_true(l->items[3].u.n == 10);
  assert_true(l->items[22].u.n == 29);
  assert_true(l->items[23].u.n == 99);
  assert_string_equal(l->items[2].u.s->s, "x");
  assert_ptr_equal(l->names[23], b);
  assert_null(l->names[22]);
  Value v = val_list(l);
  assert_int_equal(v.t, VT_LIST);
  char buf[64];
  assert_string_equal(val_describe(v, buf, sizeof buf), "a list of 24");
  val_release(v);
}

static void test_list_refcounts(void **state) {
  Fix *f = *state;
  Value s = val_cstr("shared");
  List *l = list_new(f->I, 2);
  val_retain(s);                     /* list_push takes a reference: give it one */
  list_push(l, s, NULL);
  assert_int_equal(s.u.s->refcount, 2);
  Value lv = val_list(l);
  val_retain(lv);
  assert_int_equal(l->refcount, 2);
  val_release(lv);
  assert_int_equal(l->refcount, 1);
  assert_int_equal(s.u.s->refcount, 2);       /* the list is still alive */
  val_release(lv);                             /* frees the list, releasing its items */
  assert_int_equal(s.u.s->refcount, 1);
  val_release(s);

  /* a list inside a list */
  List *inner = list_new(f->I, 1);
  Value str = val_cstr("deep");
  val_retain(str);
  list_push(inner, str, NULL);
  List *outer = list_new(f->I, 1);
  list_push(outer, val_list(inner), NULL);
  val_release(val_list(outer));
  assert_int_equal(str.u.s->refcount, 1);
  val_release(str);
}

static void test_list_copy(void **state) {
  Fix *f = *state;
  Symbol *w = sym_intern(&f->I->syms, "w", 1);
  List *l = list_new(f->I, 1);
  Value s = val_cstr("item");
  list_push(l, s, NULL);
  list_push(l, val_num(3), w);
  l->multi = true;
  List *c = list_copy(f->I, l);
  assert_ptr_not_equal(c, l);
  assert_int_equal(c->refcount, 1);
  assert_int_equal(c->n, 2);
  assert_true(c->multi);
  /* shallow: the string is shared and retained */
  assert_ptr_equal(c->items[0].u.s, s.u.s);
  assert_int_equal(s.u.s->refcount, 2);
  assert_int_equal(list_find(c, w), 1);
  assert_true(c->items[1].u.n == 3);
  /* the copy's spine is its own: pushing to it leaves the original alone */
  list_push(c, val_num(4), NULL);
  assert_int_equal(c->n, 3);
  assert_int_equal(l->n, 2);
  c->items[1] = val_num(30);
  assert_true(l->items[1].u.n == 3);
  val_release(val_list(l));
  assert_int_equal(s.u.s->refcount, 1);
  assert_string_equal(c->items[0].u.s->s, "item");
  val_release(val_list(c));

  /* copy of an empty, unnamed list */
  List *e = list_new(f->I, 0);
  List *ec = list_copy(f->I, e);
  assert_int_equal(ec->n, 0);
  assert_false(ec->multi);
  assert_int_equal(list_find(ec, w), -1);
  val_release(val_list(e));
  val_release(val_list(ec));
}

/* ---- symbols ---- */

static void test_symbols(void **state) {
  SymTab t;
  sym_init(&t);
  Symbol *a = sym_intern(&t, "alpha", 5);
  Symbol *a2 = sym_intern(&t, "alpha.beta", 5);    /* a prefix slice spells "alpha" */
  Symbol *b = sym_intern(&t, "alpha.beta", 10);
  assert_ptr_equal(a, a2);
  assert_ptr_not_equal(a, b);
  assert_string_equal(a->name, "alpha");
  assert_int_equal(a->len, 5);
  assert_string_equal(b->name, "alpha.beta");
  assert_int_equal(a->global.t, VT_UNBOUND);
  assert_ptr_equal(sym_lookup(&t, "alpha", 5), a);
  assert_null(sym_lookup(&t, "gamma", 5));
  /* many symbols: each is still unique (the table grows) */
  Symbol *syms[2000];
  char name[16];
  for (int i = 0; i < 2000; i++) {
    int n = snprintf(name, sizeof name, "v%d", i);
    syms[i] = sym_intern(&t, name, (size_t)n);
  }
  for (int i = 0; i < 2000; i++) {
    int n = snprintf(name, sizeof name, "v%d", i);
    assert_ptr_equal(sym_intern(&t, name, (size_t)n), syms[i]);
  }
  assert_ptr_equal(sym_lookup(&t, "alpha", 5), a);
  /* sym_free releases the global bindings */
  Value s = val_cstr("bound");
  val_retain(s);
  a->global = s;
  sym_free(&t);
  assert_int_equal(s.u.s->refcount, 1);
  val_release(s);
}

/* ---- tensors ---- */

static void test_tensor_new_shape(void **state) {
  Fix *f = *state;
  uint64_t allocs = mem_stats.data_allocs, bytes = mem_stats.data_bytes;
  Tensor *t = tensor_new(f->I, 3, 4);
  assert_int_equal(mem_stats.data_allocs, allocs + 1);
  assert_int_equal(mem_stats.data_bytes, bytes + 3 * 4 * sizeof(double));
  assert_int_equal(tensor_rows(t), 3);
  assert_int_equal(tensor_cols(t), 4);
  assert_int_equal(tensor_numel(t), 12);
  assert_int_equal(t->stride[0], 4);
  assert_int_equal(t->stride[1], 1);
  assert_int_equal(t->offset, 0);
  assert_int_equal(t->refcount, 1);
  assert_int_equal(t->st->refcount, 1);
  assert_int_equal(t->st->nbytes, 96);
  assert_true(tensor_is_contiguous(t));
  assert_true(tensor_is_unique(t));
  double *d = tensor_data(t);
  for (int i = 0; i < 12; i++) d[i] = i;
  assert_true(tensor_get(t, 0, 0) == 0);
  assert_true(tensor_get(t, 1, 2) == 6);       /* row-major */
  assert_true(tensor_get(t, 2, 3) == 11);
  tensor_free_ref(t);
  assert_int_equal(mem_stats.data_bytes, bytes);

  /* 0-sized matrices are allowed */
  Tensor *e = tensor_new(f->I, 0, 5);
  assert_int_equal(tensor_rows(e), 0);
  assert_int_equal(tensor_cols(e), 5);
  assert_int_equal(tensor_numel(e), 0);
  tensor_free_ref(e);
  Tensor *row = tensor_new(f->I, 1, 7);
  assert_true(tensor_is_contiguous(row));
  assert_int_equal(row->stride[0], 7);
  tensor_free_ref(row);
  assert_int_equal(mem_stats.data_bytes, bytes);
}

static void test_tensor_zeros_clone(void **state) {
  Fix *f = *state;
  Tensor *z = tensor_zeros(f->I, 4, 5);
  for (int64_t i = 0; i < 4; i++)
    for (int64_t j = 0; j < 5; j++) assert_true(tensor_get(z, i, j) == 0.0);
  tensor_data(z)[7] = 3.5;
  uint64_t allocs = mem_stats.data_allocs;
  Tensor *c = tensor_clone(f->I, z);
  assert_int_equal(mem_stats.data_allocs, allocs + 1);
  assert_ptr_not_equal(c->st, z->st);
  assert_true(tensor_get(c, 1, 2) == 3.5);
  tensor_data(c)[7] = -1;
  assert_true(tensor_get(z, 1, 2) == 3.5);      /* independent storage */
  /* tensor_contiguous of a contiguous tensor is the tensor itself, retained */
  Tensor *same = tensor_contiguous(f->I, z);
  assert_ptr_equal(same, z);
  assert_int_equal(z->refcount, 2);
  assert_false(tensor_is_unique(z));
  tensor_free_ref(same);
  assert_true(tensor_is_unique(z));
  tensor_free_ref(c);
  tensor_free_ref(z);
}

static void test_tensor_strided_view(void **state) {
  Fix *f = *state;
  Tensor *t = tensor_new(f->I, 2, 3);
  for (int i = 0; i < 6; i++) tensor_data(t)[i] = i + 1;    /* [1 2 3; 4 5 6] */
  /* a transposed view sharing the storage, as t() makes it */
  Tensor *v = tensor_view_t(t);
  assert_ptr_equal(v->st, t->st);
  assert_int_equal(t->st->refcount, 2);
  assert_int_equal(tensor_rows(v), 3);
  assert_int_equal(tensor_cols(v), 2);
  assert_int_equal(v->stride[0], 1);
  assert_int_equal(v->stride[1], 3);
  assert_false(tensor_is_contiguous(v));
  assert_true(tensor_at(v, 1) == 4);              /* row-major through the strides */
  assert_true(tensor_at(v, 4) == 3);
  assert_false(tensor_is_unique(t));          /* the storage is shared */
  assert_false(tensor_is_unique(v));
  assert_true(tensor_get(v, 2, 1) == 6);
  assert_true(tensor_get(v, 0, 1) == 4);
  uint64_t allocs = mem_stats.data_allocs;
  Tensor *p = tensor_contiguous(f->I, v);        /* packs a copy */
  assert_int_equal(mem_stats.data_allocs, allocs + 1);
  assert_ptr_not_equal(p, v);
  assert_true(tensor_is_contiguous(p));
  assert_int_equal(p->stride[0], 2);
  static const double want[] = { 1, 4, 2, 5, 3, 6 };
  for (int i = 0; i < 6; i++) assert_true(tensor_data(p)[i] == want[i]);
  tensor_free_ref(p);
  tensor_free_ref(v);                            /* the storage lives on in t */
  assert_int_equal(t->st->refcount, 1);
  assert_true(tensor_is_unique(t));
  assert_true(tensor_get(t, 1, 2) == 6);
  tensor_free_ref(t);
}

/* t() of a vector (or an empty matrix) is contiguous; t(t(X)) has X's layout; a view keeps
** a small matrix's one-block storage alive after the matrix itself is gone. */
static void test_tensor_view_t_shapes(void **state) {
  Fix *f = *state;
  Tensor *col = tensor_new(f->I, 5, 1), *row = tensor_new(f->I, 1, 5), *e = tensor_new(f->I, 3, 0);
  for (int i = 0; i < 5; i++) tensor_data(col)[i] = tensor_data(row)[i] = i;
  Tensor *ct = tensor_view_t(col), *rt = tensor_view_t(row), *et = tensor_view_t(e);
  assert_true(tensor_is_contiguous(ct));
  assert_true(tensor_is_contiguous(rt));
  assert_true(tensor_is_contiguous(et));
  assert_int_equal(tensor_rows(ct), 1);
  assert_int_equal(tensor_cols(rt), 1);
  assert_int_equal(tensor_rows(et), 0);
  assert_true(tensor_data(ct)[3] == 3 && tensor_data(rt)[4] == 4);
  Tensor *x = tensor_new(f->I, 4, 6);              /* 24 elements: one block */
  for (int i = 0; i < 24; i++) tensor_data(x)[i] = i;
  Tensor *xt = tensor_view_t(x), *xtt = tensor_view_t(xt);
  assert_true(tensor_is_contiguous(xtt));
  assert_int_equal(xtt->stride[0], 6);
  assert_int_equal(x->st->refcount, 3);
  tensor_free_ref(x);                               /* the block lives on in the views */
  tensor_free_ref(xtt);
  assert_true(tensor_get(xt, 5, 3) == 23);
  tensor_free_ref(xt);
  tensor_free_ref(et);
  tensor_free_ref(rt);
  tensor_free_ref(ct);
  tensor_free_ref(e);
  tensor_free_ref(row);
  tensor_free_ref(col);
}

static void test_matrix_value_refcount(void **state) {
  Fix *f = *state;
  uint64_t bytes = mem_stats.data_bytes;
  Tensor *t = tensor_zeros(f->I, 10, 10);
  Value m = val_mat(t);                          /* takes the reference */
  assert_int_equal(m.t, VT_MAT);
  assert_true(val_is_heap(m));
  assert_int_equal(t->refcount, 1);
  val_retain(m);
  assert_int_equal(t->refcount, 2);
  assert_false(tensor_is_unique(t));
  char buf[64];
  assert_string_equal(val_describe(m, buf, sizeof buf), "a 10x10 matrix");
  assert_string_equal(val_type_name(m), "matrix");
  /* a matrix in a list */
  List *l = list_new(f->I, 1);
  val_retain(m);
  list_push(l, m, NULL);
  assert_int_equal(t->refcount, 3);
  val_release(val_list(l));
  assert_int_equal(t->refcount, 2);
  val_release(m);
  assert_true(tensor_is_unique(t));
  assert_int_equal(mem_stats.data_bytes, bytes + 800);
  val_release(m);                                /* the last reference frees the data */
  assert_int_equal(mem_stats.data_bytes, bytes);
}

/* ---- errors from tensor_new, caught by mls_pcall ---- */

typedef struct NewArgs { int64_t r, c; } NewArgs;

static void call_tensor_new(Interp *I, void *ud) {
  NewArgs *a = ud;
  Tensor *t = tensor_new(I, a->r, a->c);
  tensor_free_ref(t);
}

static void test_tensor_new_errors(void **state) {
  Fix *f = *state;
  uint64_t allocs = mem_stats.data_allocs, bytes = mem_stats.data_bytes;
  NewArgs huge = { 1000000, 1000000 };
  assert_int_equal(mls_pcall(f->I, call_tensor_new, &huge), 1);
  assert_non_null(strstr(f->I->err.msg, "out of memory allocating a 1000000x1000000 matrix"));
  assert_string_equal(f->I->err.msg, "out of memory allocating a 1000000x1000000 matrix (7450.6 GiB)");
  /* rows*cols*8 overflows 64 bits: still a clean error */
  NewArgs over = { (int64_t)1 << 40, (int64_t)1 << 40 };
  assert_int_equal(mls_pcall(f->I, call_tensor_new, &over), 1);
  assert_non_null(strstr(f->I->err.msg, "out of memory allocating a 1099511627776x1099511627776 matrix"));
  NewArgs neg = { -1, 2 };
  assert_int_equal(mls_pcall(f->I, call_tensor_new, &neg), 1);
  assert_string_equal(f->I->err.msg, "invalid matrix size -1x2");
  assert_int_equal(mem_stats.data_allocs, allocs);
  assert_int_equal(mem_stats.data_bytes, bytes);
  NewArgs ok = { 2, 2 };
  assert_int_equal(mls_pcall(f->I, call_tensor_new, &ok), 0);
  assert_int_equal(mem_stats.data_allocs, allocs + 1);
  assert_int_equal(mem_stats.data_bytes, bytes);
}

/* ---- copy-on-write through the interpreter ---- */

/* The issue's own size: a 10^8-element matrix (800 MB) passed to a reading function and
** assigned to a second name; the peak of live data stays at one copy. */
static void test_cow_1e8_elements(void **state) {
  Fix *f = *state;
  const uint64_t big = (uint64_t)100000000 * sizeof(double);
  uint64_t a0 = mem_stats.data_allocs, b0 = mem_stats.data_bytes;
  mem_stats.data_peak = mem_stats.data_bytes;
  run_ok(f, "X = matrix(0.5, rows=10000, cols=10000)\n"
            "reader = function(M) { nrow(M) * ncol(M) + M[10000, 10000] }\n"
            "Y = X\n"
            "n = reader(X) + reader(Y)\n"
            "print(n)");
  assert_string_equal(f->out, "2e+08\n");
  assert_int_equal(mem_stats.data_allocs, a0 + 1);
  assert_true(mem_stats.data_peak - b0 < big + 4096);
  run_ok(f, "X = 0; Y = 0");
  assert_int_equal(mem_stats.data_bytes, b0);
}

static void test_cow_assign_and_call(void **state) {
  Fix *f = *state;
  const size_t big = (size_t)2000 * 2000 * sizeof(double);
  uint64_t a0 = mem_stats.data_allocs, b0 = mem_stats.data_bytes;
  run_ok(f, "A = matrix(1, rows=2000, cols=2000)");
  assert_int_equal(mem_stats.data_allocs, a0 + 1);
  assert_int_equal(mem_stats.data_bytes, b0 + big);

  /* a second name shares the data */
  uint64_t a1 = mem_stats.data_allocs;
  run_ok(f, "B = A");
  assert_int_equal(mem_stats.data_allocs, a1);
  assert_int_equal(mem_stats.data_bytes, b0 + big);
  Symbol *A = sym_lookup(&f->I->syms, "A", 1), *B = sym_lookup(&f->I->syms, "B", 1);
  assert_int_equal(A->global.t, VT_MAT);
  assert_int_equal(B->global.t, VT_MAT);
  assert_ptr_equal(A->global.u.m->st, B->global.u.m->st);

  /* a function that only reads its argument (through more local names) copies nothing */
  run_ok(f, "g = function(M) { x = M; y = x; nrow(y) + ncol(M) + M[2, 3] }");
  uint64_t a2 = mem_stats.data_allocs;
  run_ok(f, "n = g(B)\nprint(n)");
  assert_string_equal(f->out, "4001\n");
  assert_int_equal(mem_stats.data_allocs, a2);
  assert_int_equal(mem_stats.data_bytes, b0 + big);

  /* a function that returns a new matrix allocates exactly its result */
  run_ok(f, "h = function(M) { M * 2 }");
  uint64_t a3 = mem_stats.data_allocs;
  run_ok(f, "C = h(B)");
  assert_int_equal(mem_stats.data_allocs, a3 + 1);
  assert_int_equal(mem_stats.data_bytes, b0 + 2 * big);
  run_ok(f, "C = 0");
  assert_int_equal(mem_stats.data_bytes, b0 + big);

  /* modifying the copy copies once, and the original keeps its values */
  uint64_t a4 = mem_stats.data_allocs;
  run_ok(f, "B[1, 1] = 5");
  assert_int_equal(mem_stats.data_allocs, a4 + 1);
  assert_int_equal(mem_stats.data_bytes, b0 + 2 * big);
  run_ok(f, "B[2, 2] = 7");                 /* B is now unique: in place */
  assert_int_equal(mem_stats.data_allocs, a4 + 1);
  run_ok(f, "print(A[1, 1]); print(A[2, 2]); print(B[1, 1]); print(B[2, 2]); print(sum(A))");
  assert_string_equal(f->out, "1\n1\n5\n7\n4e+06\n");
  A = sym_lookup(&f->I->syms, "A", 1);
  B = sym_lookup(&f->I->syms, "B", 1);
  assert_ptr_not_equal(A->global.u.m->st, B->global.u.m->st);
  assert_true(tensor_is_unique(A->global.u.m));

  /* a function that modifies its argument changes only its local copy */
  run_ok(f, "k = function(M) { M[1, 1] = 99; M[1, 1] }");
  run_ok(f, "print(k(A)); print(A[1, 1])");
  assert_string_equal(f->out, "99\n1\n");

  /* releasing the names frees the data */
  run_ok(f, "A = 0; B = 0");
  assert_int_equal(mem_stats.data_bytes, b0);
}

static void test_cow_lists(void **state) {
  Fix *f = *state;
  run_ok(f, "A = matrix(3, rows=500, cols=500)");
  uint64_t a0 = mem_stats.data_allocs;
  run_ok(f, "L = list(a = A, b = 2); L2 = L; M = L$a");
  assert_int_equal(mem_stats.data_allocs, a0);
  run_ok(f, "L2$b = 20; print(L$b); print(L2$b)");
  assert_string_equal(f->out, "2\n20\n");
  assert_int_equal(mem_stats.data_allocs, a0);     /* the list spine is copied, not A */
  run_ok(f, "M[1, 1] = 0; print(A[1, 1]); print(L$a[1, 1]); print(M[1, 1])");
  assert_string_equal(f->out, "3\n3\n0\n");
  assert_int_equal(mem_stats.data_allocs, a0 + 1);
}

/* ---- out of memory is a runtime error, not a crash ---- */

static void test_oom_is_an_error(void **state) {
  Fix *f = *state;
  run_ok(f, "keep = 1");
  uint64_t bytes = mem_stats.data_bytes;
  assert_int_equal(run(f, "x = matrix(1, rows=1e6, cols=1e6)"), 1);
  assert_non_null(strstr(f->I->err.msg, "out of memory allocating a 1000000x1000000 matrix"));
  assert_non_null(strstr(f->err, "out of memory allocating a 1000000x1000000 matrix"));
  assert_string_equal(f->err,
                      "t.mls:1:5: error: out of memory allocating a 1000000x1000000 matrix (7450.6 GiB)\n"
                      "x = matrix(1, rows=1e6, cols=1e6)\n"
                      "    ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");
  assert_int_equal(mem_stats.data_bytes, bytes);
  /* inside a function, with other matrices alive in the frame */
  assert_int_equal(run(f, "g = function(n) { A = matrix(1, rows=10, cols=10); B = rand(rows=n, cols=n); A }\n"
                          "y = g(1e6)"), 1);
  assert_non_null(strstr(f->I->err.msg, "out of memory allocating a 1000000x1000000 matrix"));
  assert_int_equal(mem_stats.data_bytes, bytes);
  /* the interpreter goes on, with its globals */
  run_ok(f, "print(keep + 1)");
  assert_string_equal(f->out, "2\n");
}

/* A thread marked mem_forbid_thread (the kernels' pool, the Jupyter kernel's side threads) has
** no out-of-memory handler: any allocation there is an internal error, at once (in a child). */
static void test_forbidden_thread(void **state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    mem_forbid_thread();
    void *p = mem_try_alloc(16);
    (void)p;
    _exit(0);                                  /* not reached */
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
  /* this thread allocates as before */
  void *p = mem_alloc(16);
  assert_non_null(p);
  mem_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_forbidden_thread),
    cmocka_unit_test(test_str_refcount),
    cmocka_unit_test(test_unboxed_values),
    cmocka_unit_test_setup_teardown(test_list_push_find, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_list_refcounts, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_list_copy, fix_setup, fix_teardown),
    cmocka_unit_test(test_symbols),
    cmocka_unit_test_setup_teardown(test_tensor_new_shape, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_tensor_zeros_clone, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_tensor_strided_view, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_tensor_view_t_shapes, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_matrix_value_refcount, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_tensor_new_errors, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_cow_1e8_elements, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_cow_assign_and_call, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_cow_lists, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_oom_is_an_error, fix_setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
