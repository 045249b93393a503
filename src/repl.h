/*
** repl.h — the interactive loop (lua.c model): readline editing and history, multi-line
** input driven by the parser's "unexpected end of input" flag, Ctrl-C as a flag, TAB
** completion. docs/repl.md describes it.
*/
#ifndef MLS_REPL_H
#define MLS_REPL_H

#include "interp/interp.h"

/* Runs the REPL on the terminal until Ctrl-D or quit(); returns the exit status. */
int repl_run(Interp *I);

#endif
