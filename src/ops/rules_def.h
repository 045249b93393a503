/*
** ops/rules_def.h — begins an expansion of ops.def's derivative rules as ops on Values
** (ew.c's reverse and forward rules; autodiff_trace.c writes the same vocabulary as
** numbers): the operands a, b, the result y, numbers, and the table's ops through U1 and B2
** (temps on the stack). ops/rules_undef.h ends it.
*/
#define A a
#define B b
#define Y y
#define K(c) val_num(c)
#define U(OP, e) U1(OP_##OP, e)
#define BI(OP, e1, e2) B2(OP_##OP, e1, e2)
