/*
** interp.h — the evaluator's API: running programs, calls, environments and closures, the cycle
** collector, the name resolver. The interpreter's state itself (struct Interp, the temp stack)
** is state.h, which the layers below the evaluator include instead of this.
*/
#ifndef MLS_INTERP_H
#define MLS_INTERP_H

#include "state.h"

Interp *interp_new(void);
void interp_free(Interp *I);
/* Parses and runs a program. Returns the exit status: 0, 1 runtime error, 2 syntax error.
** Errors are reported on I->errf. echo: print the values of expression statements (REPL). */
int interp_run_source(Interp *I, Source *src, bool echo);
/* (clparam.c) The message for reading $name, not given: with every other $name the running
** script reads outside ifdef and was not given, and the meaning of each from its header. */
void interp_missing_params_msg(Interp *I, const char *name, char *buf, size_t cap);
/* Like interp_run_source, but reports "at_eof" parse errors by returning -1 without printing
** (the REPL then reads another line). */
int interp_run_repl_chunk(Interp *I, Source *src);
/* src parsed and its names resolved (resolve_chunk; module: top-level names are slots of the
** chunk): the chunk (+1), or NULL with the error in *pe, a syntax error or a resolver's (pe->oom:
** memory ran out). */
struct ParseError;
Chunk *interp_load(Interp *I, Source *src, bool module, struct ParseError *pe);
/* Prints I->err with the caret line and call stack. */
void interp_report_error(Interp *I);
/* Binds a command-line value ($name); the string is converted per LANGUAGE.md §1. */
void interp_set_param(Interp *I, const char *name, const char *text);
/* The standard library's directory ($MLS_PATH, stdlib/ beside the executable, ...); the result
** points into buf or at static text. */
const char *interp_stdlib_dir(Interp *I, char *buf, size_t n);

/* The bytes of C stack the interpreter may use on the calling thread (its stack less a margin).
** interp_run_source asks once per thread and keeps it in I (stack_found); an embedder making many
** interpreters on one thread (the fuzzing harnesses) may fill stack_found and stack_thread itself. */
size_t interp_thread_stack_budget(void);

/* env.c: the envs and closures made are tracked on I's heap (gc.c). */
Env *env_new(Interp *I, const FuncInfo *fi, Env *parent);
void env_release(Env *e);
Value closure_new(Interp *I, const FuncInfo *fi, Env *env);
/* A function made by grad(): calls go to ad_call_derived; takes d. */
Value closure_new_derived(Interp *I, struct Derived *d, const char *name);
void ad_derived_free(struct Derived *d);
void closure_free(Closure *c);

/* gc.c: the cycle collector. Reference counting frees everything else at once; what it cannot
** free is a cycle, and gc_collect finds the lists, closures and envs of I's heap that only other
** such objects hold and frees them (CPython's algorithm: subtract the references the objects
** make to one another; whatever still has references left is held from outside, and so is all
** it reaches). Returns how many objects it freed. gc_maybe collects when the tracked objects
** have grown past a threshold (at least gc_set_min new ones, and as many as lived after the last
** collection; gc_set_min(I, 0): at every call, a test mode); the evaluator calls it where no C
** code holds an uncounted reference: when a function call returns and between top-level
** statements. Each interpreter has its heap (I->gc): gc_init makes it empty (interp_new), and
** gc_detach_all unlinks what is left on it (interp_free, after its last collection), so that a
** value outliving its interpreter is freed later without touching it. */
void gc_init(Interp *I);
void gc_detach_all(Interp *I);
int64_t gc_collect(Interp *I);
/* The same among the objects made after mark (a tracked object the caller holds, made first):
** references from older ones count as from outside. What a failed attempt made that only its
** own objects hold (staging/stage.c: an abstract trace that stopped) goes, nothing else. */
int64_t gc_collect_since(Interp *I, GcLink *mark);
void gc_maybe(Interp *I);
void gc_set_min(Interp *I, int64_t n);
int64_t gc_tracked(Interp *I);     /* lists, closures and envs alive on I's heap */
typedef void (*GcVisit)(GcLink *child, void *ctx);
void gc_visit_value(Value v, GcVisit fn, void *ctx);
/* The counted references of what autodiff.c and stage.c own: a grad/jit function's Derived
** (its function and argnum) and a Jit's cache (the functions kept in its keys). */
void ad_derived_children(const struct Derived *d, GcVisit fn, void *ctx);

/* resolve.c: binds every name in the chunk to a slot or a global; reports errors like break
** outside a loop into *err (returns false). module: top-level names become slots of ch->top.
** *oom (may be NULL): the error is that memory ran out, not a mistake in the program. */
bool resolve_chunk(Interp *I, Chunk *ch, bool module, char *err, size_t errn, Span *errspan, bool *oom);

/* call.c */
/* Calls fn (a user, builtin, grad or jit function) on args (borrowed; names[i] NULL:
** positional); the result is owned by the caller. */
Value call_value(Interp *I, Value fn, int nargs, Value *args, Symbol **names, Span sp);
/* True when args bind to c's parameters with their declared DML types (an integer parameter's
** check depends on the value: a jit replay checks it, else the call runs eagerly and throws). */
bool call_types_ok(const Closure *c, int nargs, const Value *args, Symbol **names);
/* Pushes fr on the call stack I->frames, growing it (out of memory: the error, nothing pushed),
** and returns it, in place until the next push. An env goes in after the push (f->env =
** env_new(...)), so that a failed push leaks none: the frame holds it, a throw releases it as it
** pops the frame, the pusher pops with I->nframes-- and env_release. bounded: first the error
** "stack overflow (more than N nested calls)" at fr.call_site when I->maxframes frames are live.
** Only the frames with entered set show in an error's call stack. */
Frame *frame_push(Interp *I, Frame fr, bool bounded);
/* A frame for fn while its staged graph runs, so errors show "in f() at ..." as eagerly; false
** (nothing pushed) when fn is not a user function. Pop with I->nframes--. */
bool frame_push_staged(Interp *I, Value fn, Span sp);

/* eval.c */
/* Evaluates n; the result is owned by the caller. */
static inline Value eval(Interp *I, AstNode *n) { return n->ev(I, n); }
/* Chooses n->ev (n->evn, n->loop) for one node, its kids prepared before it (called by the
** resolver for every node); a loop's program is made in arena a (its chunk's). */
void eval_prepare(AstNode *n, Arena *a);
/* Evaluates the statements of a chunk at top level (I->env NULL). */
Value eval_chunk(Interp *I, Chunk *ch, bool echo);
/* For parfor (mode=REMOTE) (src/mpi/parfor.c): the place name node n refers to now (NULL when
** unbound; borrowed), and an assignment to n (takes v). */
Value *eval_name_place(Interp *I, AstNode *n);
void eval_assign_name(Interp *I, AstNode *n, Value v);
/* Runs the file as source() does; binds names in ns if not NULL. */
Value interp_source(Interp *I, const char *path, Symbol *ns, Span sp);
/* The builtin written in MLS called name: the function of that name defined by the file
** builtin/NAME.mls of the standard library, or else SystemDS's m_NAME (f_NAME, s_NAME) of
** NAME.dml in the DML builtins directory; the file is run as a namespace on the first request
** (errors are located in it; sp is the call that asked). Returns it (+1), or VT_UNBOUND when
** there is no such file. The evaluator asks only after user functions and C builtins. */
Value interp_lib_function(Interp *I, Symbol *name, Span sp);
/* Where the builtin written in MLS or DML called name lives: stdlib's builtin/NAME.mls, else
** (*dml set) NAME.dml in the DML builtins directory (interp_dml_entries); false when neither
** file is readable. interp_lib_function and the checker (check_builtins.c) share it. */
bool interp_lib_path(Interp *I, Symbol *name, char *path, size_t n, bool *dml);
/* The functions that may be the DML builtin name in its file NAME.dml, in the order looked for:
** SystemDS's m_NAME (matrix), f_NAME (frame) and s_NAME (scalar or list) (interned into out). */
void interp_dml_entries(Interp *I, Symbol *name, Symbol *out[3]);
/* SystemDS's scripts/builtin directory: --dml-builtins DIR (I->dml_builtins_dir), else
** $MLS_DML_BUILTINS, else NULL (docs/dml.md "Builtins written in DML"). */
const char *interp_dml_builtins_dir(const Interp *I);
/* source()'s last resort: path under the directory above the DML builtins directory or the one
** above that (SystemDS's scripts/ and its root), as SystemDS's builtins source "nn/..." and
** "scripts/builtin/..."; the file found is written to out. False when none is readable. */
bool interp_dml_root_file(const Interp *I, const char *path, char *out, size_t n);
/* True while the code running is a .dml file's (I->src): builtins that follow SystemDS there
** and R elsewhere (round) ask. */
bool interp_in_dml(const Interp *I);
/* Prints the names of the builtins written in MLS (the files builtin/NAME.mls), for help(). */
void interp_lib_list(Interp *I, FILE *out);
/* help.search's part: the builtins written in MLS whose name or #' lines hold pat (without
** regard to case), one line each (its first #' line); the header line first when none was
** printed before (before: the matches already printed). Returns how many matched. */
int interp_lib_search(Interp *I, const char *pat, int before, FILE *out);
/* "; did you mean 'rowSums'?" (or "") for a name not found: the nearest names in scope, builtins
** and stdlib builtins by edit distance (suggest.c). */
void interp_suggest(Interp *I, const char *name, char *out, size_t n);

/* The place name sym refers to in the running code (its innermost binding: a slot of the
** running function or a file sourced as a namespace, outward, then the global), or NULL. */
Value *interp_find_name(Interp *I, Symbol *sym);

/* masked.c: `W * expr` computed at the stored cells of the sparse W only, as a sparse matrix of
** W's pattern (+1), when that gives the dense values (docs/sparse.md "Sparse-safe expressions":
** expr a form of products, +, -, *, ^2, log and exp over names, numbers and t(name), finite at
** every cell); while a stage traces with values, recorded as one masked node (located at sp);
** else val_unbound(), nothing evaluated that cannot be evaluated again. W borrowed. */
Value eval_masked(Interp *I, AstNode *expr, Value W, Span sp);

#endif
