/*
** state.h — the interpreter's state (struct Interp) and what every layer does with it: the temp
** stack that makes throws leak-free, the interrupt polls, the error of --nan-check, a value as
** a condition or a number (val_truth, val_to_num). The op families (src/ops/), autodiff and
** staging include this, not interp/interp.h (the evaluator's API): tools/check_layers.py.
** Everything lives here (no globals: make globals-check; the few exceptions, and why, in
** tools/globals_allow.txt).
*/
#ifndef MLS_STATE_H
#define MLS_STATE_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include "ast.h"
#include "diag.h"
#include "err.h"
#include "sym.h"
#include "value.h"

/* A function call's locals (LANGUAGE.md §9: lexical scope, closures capture it). */
typedef struct Env {
  int32_t refcount;
  int32_t n;
  struct Env *parent;        /* the defining function's env; NULL = the global scope */
  int32_t stage_id;          /* the stage tape active when it was made (0 = none) */
  const FuncInfo *fi;        /* names of the slots */
  GcLink gc;
  Value slots[];
} Env;

typedef struct Closure {
  int32_t refcount;
  const FuncInfo *fi;        /* NULL for a derived function (grad(f)) */
  Env *env;                  /* retained; NULL at top level */
  Chunk *chunk;              /* retained: keeps the tree alive; NULL when derived */
  struct Derived *derived;   /* grad(f), value_and_grad(f): autodiff.c owns it */
  struct Jit *jit;           /* --jit-all: this function's staged graphs (stage.c), or NULL */
  const char *dname;         /* "grad" or "value_and_grad" when derived */
  uint64_t serial;           /* 0, or unique in its interpreter (I->closure_serial): a staged graph
                             ** checks that a place still holds the function it guarded by it */
  GcLink gc;
} Closure;

typedef struct Frame {
  const FuncInfo *fi;        /* the function running */
  Source *src;               /* its source (for error locations inside it) */
  Source *call_src;          /* where it was called from */
  Span call_site;
  Env *env;                  /* retained while the frame is live */
  bool entered;              /* arguments bound: errors from here on are inside the callee */
} Frame;

/* The calls a staged graph's node was inlined through while tracing, outermost first: a run of
** the node reports them in an error's call stack as the frames eager code would have had
** (record_trace, err.c). Owned by the graph. */
typedef struct InlineFrame {
  char name[48];
  Source *call_src;
  Span call_site;
  bool entry;                /* called where the traced jit call was: a run names its own call's place */
} InlineFrame;
typedef struct InlineChain { int32_t n; InlineFrame *f; } InlineChain;
/* The chains of the loop nodes whose bodies are running around a node (run_nodes, on the C
** stack), innermost first: a body's node was inlined through its own calls inside the body,
** then through the loop node's. */
typedef struct ChainLink { const InlineChain *c; const struct ChainLink *up; } ChainLink;

typedef struct Defer { CleanupFn fn; void *p; } Defer;

typedef struct CmdParam { Symbol *name; Value v; } CmdParam;

enum { CTL_NONE, CTL_BREAK, CTL_NEXT, CTL_RETURN };

typedef struct ErrInfo {
  char msg[1024];
  Source *src;               /* retained */
  Span span;
  char trace[2048];          /* "  in f() at file:line:col" lines */
  int status;                /* exit status the error implies: 1 runtime, 2 syntax */
  bool warning;              /* thrown by warning() to a tryCatch(warning=) (Interp.warn_catch) */
} ErrInfo;

struct BiInfo;

/* The reductions of allreduce (its op= argument and OP_ALLREDUCE's extra; src/mpi/). */
/* Interp.sparse_mode. SPARSE_EXACT: SPARSE_ALWAYS with only the kernels that give the dense
** bits (no sums, no libmvec), every other op dense: gen_diff's mode, compared bit for bit. */
enum { SPARSE_AUTO = 0, SPARSE_NEVER, SPARSE_ALWAYS, SPARSE_EXACT };
enum { MPI_RED_SUM = 0, MPI_RED_MAX = 1, MPI_RED_MIN = 2 };

struct Interp {
  SymTab syms;
  FILE *out, *errf;
  FILE *stderr_to;           /* where write(X, "/dev/stderr") goes when set (a front end's stream:
                             ** the Jupyter kernel's "stderr" messages); NULL: descriptor 2.
                             ** "/dev/stdout" goes to out when out is not stdout */
  bool bar_open;             /* a progress bar's line is on errf, unfinished (progress.c) */
  /* errors */
  ErrJmp *errjmp;
  ErrInfo err;
  int warn_catch;            /* tryCatch(warning=) calls running their expression: warning() throws */
  bool warn_pending;         /* the next throw is warning()'s (mls_throw moves it into err.warning) */
  /* temporaries live across a possible throw (released by mls_pcall) */
  Value *tmp;
  int ntmp, captmp;
  /* C-owned cleanups a throw runs (mls_defer, err.h) */
  struct Defer *defers;
  int ndefers, capdefers;
  /* call frames */
  Frame *frames;
  int nframes, capframes, maxframes;
  Env *env;                  /* current locals; NULL at top level */
  Source *src;               /* source of the code being run */
  int ctl;                   /* CTL_*: a break/next/return in flight */
  Value retval;
  Span call_span;            /* the builtin call being run (for argument errors) */
  const struct Builtin *cur_bi;
  int eval_depth;
  /* command-line values $name, $1 */
  CmdParam *params;
  int nparams;
  /* builtins: per-row parsed signatures */
  struct BiInfo *bi;
  int nbi;
  /* settings */
  uint64_t seed;
  bool seed_set;
  int print_digits;          /* print()'s and the REPL's default significant digits (--digits) */
  uint64_t rng[4];           /* xoshiro256** state of rand() without seed= */
  bool rng_ready;
  int threads;
  bool no_write;             /* write(), save() and dot() refuse (the fuzzing harnesses, tests/fuzz) */
  bool repl;                 /* echo expression values */
  const char *stdlib_dir;
  const char *dml_builtins_dir;  /* --dml-builtins DIR (interp_dml_builtins_dir), or NULL */
  volatile sig_atomic_t interrupted;
  const struct TraceMark *traces;   /* the functions being traced for jit, innermost first (stage.c) */
  const InlineChain *gchain; /* a graph node running (graph_run_nodes): its inlined calls, shown */
  int gchain_at;             /* in a call stack above frames[0..gchain_at) */
  const ChainLink *gchain_up; /* the enclosing loop nodes' chains, shown after gchain's */
  Source *gentry_src;        /* a jit call's graph running: where it was called (an entry frame's */
  Span gentry_sp;            /* call site), else NULL */
  int64_t fuel;              /* fuzz builds (MLS_FUZZ): loop iterations and calls left, then as
                             ** Ctrl-C; a budget that, unlike a timer, stops a run at the same
                             ** place every time (0: none) */
  bool quitting;             /* quit() was called: unwind, report nothing, exit quit_status */
  int quit_status;
  char *stack_base;          /* C stack at the first entry, for the stack-depth guard */
  size_t stack_limit;        /* bytes of C stack the interpreter may use */
  Value last;                /* last echoed value: ans */
  int32_t ad_next_id;        /* ids of grad tapes: larger is more deeply nested */
  bool ad_no_checkpoint;     /* trace_grad's forward table: a loop node's iterations are recorded
                             ** one by one, not checkpointed (staging/loop.c) */
  bool nan_check;            /* --nan-check: stop at the first op that makes NaN/Inf */
  bool dev_scalars;          /* capturing a graph (staging/replay.c): a reduction of a device
                             ** matrix to a number stays a 1x1 matrix there (not read on the host) */
  const char *ad_backward_of; /* the op whose derivative is being computed (messages) */
  struct AdHook *ad_hook;    /* set just before calling a grad(f) (src/mpi/'s bucketed allreduce,
                             ** autodiff.h): that call's backward pass reports final adjoints */
  struct Tape *stage;        /* the innermost active staging tape (jit, --staged), or NULL */
  bool staged_mode;          /* --staged: straight-line blocks of the script run staged */
  bool explain_staged;       /* --explain: print each staged block's graph */
  bool jit_all;              /* --jit-all (a test aid): every user function call runs as jit(f) */
  bool log_compiles;         /* --log-compiles / $MLS_LOG_COMPILES: each jit trace and cache drop,
                             ** with its reason, on stderr (docs/staging.md) */
  bool exact_rewrites;       /* $MLS_EXACT_REWRITES (a test aid, tests/gen): staged graphs skip the
                             ** rewrites that change the last bits (softplus, logsoftmax, exp(log(x)),
                             ** sum(X %*% Y)), so staged results equal eager ones bit for bit */
  bool jit_bypass;           /* the next call_value of a user function runs it as it is */
  int block_frame;           /* > 0: the body of the call at this frame depth runs as staged blocks
                             ** (a jit function whose control flow depends on traced values), and
                             ** so do the bodies of the calls deeper (eval.c staging_blocks) */
  struct StagedBlocks *blocks;
  struct LibFn *libfns;      /* builtins written in MLS (stdlib/builtin/NAME.mls), once loaded */
  int nlibfns;
  /* rich output: a front end that shows images (the Jupyter kernel, src/kernel/) sets display;
  ** plot_flush (src/plot/plot.h) then hands it each figure changed since the last flush as
  ** mime ("image/png") bytes instead of writing a file. NULL: plots go to files. */
  void (*display)(struct Interp *I, const char *mime, const unsigned char *data, size_t len, void *ctx);
  void *display_ctx;
  /* the REPL's echo of an expression statement's value v (borrowed, for the call) and its
  ** printed text (no newline), handed to a front end with display_ctx instead of printed on
  ** out when set (the Jupyter kernel turns the last one into the cell's result, a matrix also
  ** as an HTML table). NULL: printed. */
  void (*echo)(struct Interp *I, Value v, const char *text, size_t len, void *ctx);
  /* display(x) (builtins_core.c): the same for a value shown at once (display_data). NULL:
  ** printed as print(x) does. */
  void (*display_value)(struct Interp *I, Value v, const char *text, size_t len, void *ctx);
  /* the bar of for (i in progress(x)) in a front end that redraws output in place (progress.h
  ** ProgressShow, called with display_ctx). NULL: drawn on a terminal's stderr. */
  void (*progress)(void *ctx, int phase, int64_t done, int64_t total, const char *text);
  struct PlotState *plot;    /* figures of plot() and friends (src/plot/), NULL until the first */
  /* ---- state of the modules below, theirs to read and write (no file-scope state: issue 26,
  ** docs/robustness.md "Global state") ---- */
  GcHeap gc;                 /* the lists, closures and envs made for this interpreter, and the
                             ** schedule of their cycle collector (interp/gc.c) */
  size_t stack_found;        /* the stack budget found for the thread stack_thread (0: none yet): */
  pthread_t stack_thread;    /* interp.c asks the system once per thread, not at every run */
  void *spare_parser;        /* the parser kept for the next parse (parse.c), or NULL */
  uint64_t closure_serial;   /* the last Closure.serial handed out (env.c: given when a staged
                             ** graph first guards the function) */
  int replay_mode;           /* staged graphs as captured launches (staging/replay.c): bits 1 on,
                             ** 2 log, 4 capture even when not worth it; -1: from $MLS_REPLAY and
                             ** $MLS_REPLAY_LOG at the next graph */
  double la_thread_flops;    /* a LAPACK call estimated at this many flops or more runs on a worker
                             ** thread that Ctrl-C does not wait for (ops/linalg.c; 1e9) */
  struct LaJob *la_abandoned; /* such calls interrupted, their workers perhaps still running */
  /* the communication backend's allreduce (OP_ALLREDUCE's kernel, src/ops/comm.c): src/mpi/'s
  ** (mpi_allreduce_value; one process without MPI), set by interp_new */
  Value (*comm_allreduce)(struct Interp *I, Value x, int op, Span sp);
  const struct Backend *device; /* the backend new matrices are made on: the CPU, or the GPU
                             ** after --device gpu or device("gpu") (backend/registry.c) */
  const struct Backend *cpu; /* this interpreter's CPU instance (backends->cpu): host data */
  struct BackendSet *backends; /* this interpreter's backend instances (backend.h): the CPU's
                             ** buffer cache and threads, the GPU's context; freed by interp_free */
  struct Tensor *mask_dense, *mask_sparse;   /* ops/masked.c: the last dense W a staged masked
                             ** node read as sparse (retained, so never changed in place while
                             ** kept) and its sparse copy (NULL: W had too many nonzeros) */
  struct Tensor *mask_leaf;  /* ops/masked.c: the last full-size leaf whose bounds it computed
                             ** (retained: unchanged while kept), those bounds, and its values at
                             ** mask_sparse's cells (NULL: not kept) */
  double mask_leaf_lo, mask_leaf_hi;
  double *mask_leaf_vals;
  int sparse_mode;           /* the format rule (tensor_prefer_sparse, docs/sparse.md): SPARSE_AUTO,
                             ** SPARSE_NEVER (every matrix dense), SPARSE_ALWAYS (every result an
                             ** op can keep sparse is: --sparse always, the test mode) */
  uint64_t be_fallbacks;     /* ops a device could not run and the CPU ran instead (be_runner;
                             ** $MLS_CUDA_STATS prints it at the end) */
  double mpi_timeout;        /* --mpi-timeout: seconds a collective waits for the others; 0: forever */
  bool mpi_joint;            /* the last collective error was found by every rank at once (mpi.c) */
  int parfor_depth;          /* > 0 while this rank runs a remote parfor's iterations (parfor.c) */
  uint64_t kernel_runs;      /* backend kernels run: op_run_kernel, a GEMM, a LAPACK or device
                             ** solver call, an nn kernel, a fused group, a captured graph's launch
                             ** (explain's abstract trace runs none: tests/unit/test_abstract.c) */
  bool abstract;             /* an abstract trace runs (explain, staging/stage.c): ops on staged
                             ** values get their shapes from the shape rules, no kernel runs */
  bool abstract_stopped;     /* the last error is interp_abstract_stop's, not the program's */
  bool abstract_pending;     /* a stop noted where a throw could leak (interp_abstract_note) */
  bool loop_restart;         /* the body of a loop a grad traces inside a stage met an effect before
                             ** running it: the loop runs again as before (staging/loop.h) */
  uint64_t effects;          /* calls of BI_EFFECT builtins so far: a builtin that calls a function
                             ** it is given (jvp) runs with no stage, and one that met an effect
                             ** there makes its block eager (builtins.c, bi_call_lent) */
  int abstract_frames;       /* nframes when the abstract trace began: a recursion more than
                             ** ABSTRACT_DEPTH calls deeper stops it (call.c), so that it never
                             ** unwinds from deep in the C stack only to descend again */
  char abstract_why[320];    /* why the last abstract trace stopped: "<reason> at <file:line:col>" */
};

/* temp stack */
static inline void tmp_push(Interp *I, Value v) {
  extern void tmp_grow(Interp *I, Value pending);
  if (I->ntmp == I->captmp) tmp_grow(I, v);
  I->tmp[I->ntmp++] = v;
}
static inline void tmp_pop(Interp *I, int n) { I->ntmp -= n; }
void tmp_release_to(Interp *I, int mark);

/* The error "interrupted" (or "terminated (SIGTERM)") when a signal has set I->interrupted (state.c). */
void interp_check_interrupt(Interp *I, Span sp);
#ifdef MLS_FUZZ
#define interp_burn(I) ((I)->fuel > 0 && --(I)->fuel == 0 ? (void)((I)->interrupted = SIGINT) : (void)0)
#else
#define interp_burn(I) ((void)0)
#endif
/* Coarse Ctrl-C polling for the long loops of builtins, readers and kernels run by the
** evaluator: true when the flag is set and i is a multiple of 2^20 (the caller lets go of what
** it holds, then calls interp_check_interrupt). */
static inline bool interp_poll(const Interp *I, int64_t i) { return (i & ((1 << 20) - 1)) == 0 && I->interrupted; }
/* The same for loops whose steps handle w elements each (a row, a run): true when the flag is
** set and about 2^20 elements have passed since the last poll (*budget starts at 0). */
static inline bool interp_tick(const Interp *I, int64_t *budget, int64_t w) {
  if ((*budget -= w + 1) > 0) return false;
  *budget = (int64_t)1 << 20;
  return I->interrupted != 0;
}
/* An abstract trace (I->abstract) met something that needs values (a condition on a staged
** value, an effect, a data-dependent shape ...): sets I->abstract_stopped and abstract_why (the
** reason and sp's place, or the noted one's) and throws it; explain catches it and traces again
** with values (docs/staging.md). */
l_noret interp_abstract_stop(Interp *I, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same noted where a throw could leak what the caller holds (ad_concrete's callers, which
** never threw): the first note wins, and the next poll (an op, a builtin or function call, a loop
** iteration, a condition; the trace's end) stops the trace with it. Until then the code runs on
** with values that are zeros, and so does nothing a poll does not come before. */
void interp_abstract_note(Interp *I, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define ABSTRACT_DEPTH 1000
static inline void interp_abstract_poll(Interp *I, Span sp) {
  if (I->abstract_pending) interp_abstract_stop(I, sp, "%s", "");
}
/* --nan-check: the error for an op whose finite inputs gave a NaN or Inf. */
l_noret nan_check_fail(Interp *I, const char *op, Span sp);

/* v (borrowed; staging's boxes removed by ad_concrete) as an if/while condition: a boolean, a
** number or a 1x1 matrix, not NaN; else the located error at sp. */
bool val_truth(Interp *I, Value v, Span sp);
/* v (borrowed; ad_concrete as above) as a number: a number, boolean or 1x1 matrix; else the
** error "<what> must be a number, got ..." at sp. */
double val_to_num(Interp *I, Value v, Span sp, const char *what);

#endif
