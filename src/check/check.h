/*
** check.h — static shape analysis (mls --check, explain): a program's shapes evaluated from its
** literals, its inputs' shapes and the shape rules, with no kernel run and no effect.
*/
#ifndef MLS_CHECK_H
#define MLS_CHECK_H

#include "mls.h"
#include "value.h"

struct Source;
struct Symbol;

/* mls --check: analyzes the program src (borrowed; -nvargs values already bound in I, read
** like the run does). A certain error (a non-conformable product, an index out of bounds, ...
** reached for certain) is reported on I->errf as the run would report it: returns 1. A syntax
** error is reported as the run reports it: 2 (1 when memory ran out). Otherwise 0, printing
** nothing. Runs no kernel, allocates no matrix data, has no effect but reading .mtd sidecars
** and sourced files. */
int check_program(Interp *I, struct Source *src);

/* explain(f, ...) before it traces: f (borrowed) analyzed on the shapes of args (borrowed;
** names[i] NULL when positional), with the globals it reads as they are now. A certain error
** is thrown as running f would throw it (located in f's source, with the calls that led
** there, sp being the call of explain); otherwise nothing happens. */
void check_call(Interp *I, Value f, int nargs, const Value *args, struct Symbol **names, Span sp);

#endif
