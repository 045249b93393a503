/*
** ops/shapes_impl.h — what the families' shape rules share (ops/shapes.h is their public face):
** ordered checks that fail with the eager code's own message when every part it names is known,
** the messages every op gives alike, and each family's rules, which its file of src/ops/ holds
** beside its kernels' entry and derivative rules. The table of ops.def's rules is shapes.c's.
*/
#ifndef MLS_OPS_SHAPES_IMPL_H
#define MLS_OPS_SHAPES_IMPL_H

#include "ops/shapes.h"

/* ---- ordered checks: each passes, fails (with the eager message when every part it names
** is known) or cannot tell; after one that cannot tell, a failure is certain but its message
** is not (an earlier check may fail first, with another). ---- */
typedef struct Chk {
  bool sure;            /* every check so far passed for certain */
  bool failed;
  bool exact;           /* the failure's message is the eager one */
  ShapeError *err;
} Chk;

typedef ShapeStatus (*ShapeRuleFn)(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);

/* ---- shapes.c: kinds, dimensions, checks and the messages every op gives alike ---- */
bool sh_numlike(Shape s);
bool sh_unknown(Shape s);
bool sh_matlike(Shape s);
bool sh_maybe_matlike(Shape s);
void sh_dims(Shape s, int64_t *r, int64_t *c);
void chk_init(Chk *k, ShapeError *err);
__attribute__((format(printf, 3, 4))) void chk_fail(Chk *k, Span sp, const char *fmt, ...);
void chk_fail_unsaid(Chk *k);
ShapeStatus chk_status(const Chk *k);
bool sh_shape_str(Shape s, char *buf, size_t n);
bool sh_got_str(Shape s, char *buf, size_t n);
const char *sh_name_of(OpKind op, const ShapeExtra *x);
void sh_bad_operand(Chk *k, OpKind op, Shape v, Span sp);
void sh_bad_operands(Chk *k, OpKind op, Shape a, Shape b, Span sp);
void sh_bad_argn(Chk *k, const char *name, int argn, Span sp, const char *what, Shape v);
int64_t sh_pick(int64_t x, int64_t y);
void sh_need_matlike(Chk *k, OpKind op, Shape v, Span sp);

/* shape.c: the checks of a range a:b (its ends known or not), for indexing too (its length:
** op_range_length, ops.h). */
void sh_range_checks(Chk *k, Shape a, Shape b, Span sp, bool *known, double *from, double *to);

/* ---- the rules, by family (a rule per op or group of ops; the table in shapes.c) ---- */
ShapeStatus shape_rule_allreduce(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_diag(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_ew1(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_ew2(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_grad_aux(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_ifelse(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_index(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_linalg1(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_matmul(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_nn(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_products(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_range(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_reduce(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_reshape(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_scan(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_scatter(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_solve(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_sumprod(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
ShapeStatus shape_rule_transpose(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);

#endif
