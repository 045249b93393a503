/*
** ast.h — the syntax tree. Nodes live in the arena of their Chunk (one per parsed program or
** REPL entry, refcounted; closures retain it) and are never freed one by one. The grammar's
** actions call only these constructors; src/interp/resolve.c later binds names to slots.
*/
#ifndef MLS_AST_H
#define MLS_AST_H

#include "mls.h"
#include "ops.h"

struct Symbol;
struct Source;

typedef enum AstKind {      /* grep ORDER AST: ast_kind_name() follows this order */
  AST_NUM, AST_STR, AST_BOOL, AST_NULL, AST_NAME, AST_CLPARAM, AST_NSREF,
  AST_BINARY, AST_UNARY, AST_ANDAND, AST_OROR,
  AST_CALL, AST_ARG, AST_INDEX, AST_MEMBER, AST_MATRIX, AST_ROW,
  AST_FUNCTION, AST_RETURN, AST_BLOCK, AST_IF, AST_WHILE, AST_FOR,
  AST_BREAK, AST_NEXT, AST_ASSIGN, AST_MASSIGN, AST_SOURCE_AS, AST_PARAMDEF,
  AST_KIND_COUNT
} AstKind;

/* AST_F_DMLROW: an index X[i] written in a .dml file; on a matrix that is not a column vector
** it is DML's row index X[i, ] (eval.c), anywhere else R's single index.
** AST_F_DMLMULTI: [a, b] = f() written in a .dml file: it may bind the first results of a call
** that gives more (SystemDS's builtin lstm has 2, 3 or 5 results).
** AST_F_REMOTE: parfor (..., mode=REMOTE) (src/mpi/).
** AST_F_VOID: an if whose value nothing reads (a block's statement before its last, a loop's
** body's last): staging may make it a choice of both branches (eval.c if_select).
** AST_F_HOISTED: a top-level `name = function ...` of a .dml file: DML defines a file's functions
** before its first statement runs (SystemDS collects them first), so eval_chunk defines these
** first, in their order, and skips them where they stand (docs/dml.md "Function hoisting").
** AST_F_DMLFIRST: x = f(...) written in a .dml file: a call giving several results (a DML
** function's, or a multi-result builtin's) assigns its first, as in SystemDS.
** AST_F_OWNFN: the callee's name of a call f(...) in a .dml file sourced as a namespace, where f is
** not one of the file's own names: as in DML, the call finds a builtin, never the caller's (global)
** variable or function f (resolve.c).
** AST_F_EMPTY: an argument `name =` with no value (its kid is a FALSE that nothing reads): only
** switch() takes one (a fall-through alternative); any other call is the located error.
** AST_F_INTO: a name read as the operand of an elementwise operator whose result is assigned to
** that same variable (X = X / 255, X = -X), or as the matrix of X = X[perm, ]: when the
** variable's value is held by nothing else, the evaluator lends it to the op, which may write
** the result over it (eval.c lend_target). */
enum { AST_F_PAREN = 1, AST_F_DMLROW = 2, AST_F_DMLMULTI = 4, AST_F_REMOTE = 8, AST_F_VOID = 16,
       AST_F_HOISTED = 32, AST_F_DMLFIRST = 64, AST_F_OWNFN = 128, AST_F_EMPTY = 256, AST_F_INTO = 512 };

/* Trees taller than this are rejected when parsing ("nested too deeply"), so evaluating
** one can never exhaust the C stack (the interpreter thread has 1 GiB). */
#define AST_MAX_HEIGHT 100000   /* written in parentheses */

/* Declared types of DML-style parameters and results (LANGUAGE.md §9). */
typedef enum TypeKind { TY_ANY, TY_MATRIX, TY_DOUBLE, TY_INT, TY_BOOL, TY_STRING, TY_LIST, TY_FUNC, TY_FRAME } TypeKind;

typedef struct AstNode AstNode;

typedef struct Param {
  struct Symbol *name;
  AstNode *dflt;           /* default expression or NULL */
  uint8_t type;            /* TypeKind */
  Span span;
} Param;

typedef struct FuncInfo {
  int nparams, nrets;
  Param *params;
  Param *rets;             /* DML named results, or NULL (R style) */
  AstNode *body;
  struct Symbol *name;     /* the name it was assigned to, for stack traces; may be NULL */
  int nslots;              /* locals: params first, then rets (one named like a parameter shares its
                           ** slot), then assigned names */
  struct Symbol **slots;
  struct FuncInfo *outer;  /* lexically enclosing function, NULL at top level */
  struct Chunk *chunk;     /* owning chunk (not retained: the node is inside it) */
  Span span;               /* the 'function(...)' header */
} FuncInfo;

struct Interp;
struct AstNode {
  /* how to evaluate this node, chosen once by eval_prepare() (closure compilation) */
  struct Value (*ev)(struct Interp *I, struct AstNode *n);
  /* a pure number expression (numbers and names combined by elementwise ops, eval.c "number
  ** evaluators"): its value as a double, without a Value, when every name it reads holds a
  ** number (false, nothing done: evaluate it with ev). NULL for any other node. */
  bool (*evn)(struct Interp *I, struct AstNode *n, double *out);
  struct NumLoop *loop;    /* AST_WHILE: its test and body as one number program (eval.c), or NULL */
  uint8_t kind;            /* AstKind */
  uint8_t op;              /* OpKind for AST_BINARY / AST_UNARY */
  uint16_t flags;
  uint32_t nkids;
  Span span;
  union {
    double num;                            /* AST_NUM, AST_BOOL (0/1) */
    struct { const char *s; uint32_t len; } str;  /* AST_STR */
    struct Symbol *sym;                    /* NAME, CLPARAM, MEMBER, ARG, NSREF(ns), SOURCE_AS */
    FuncInfo *fn;                          /* AST_FUNCTION */
  } u;
  struct Symbol *sym2;     /* AST_NSREF: the member name */
  int32_t slot;            /* AST_NAME: local slot, or -1 for a global */
  int32_t depth;           /* AST_NAME: how many functions out the slot lives */
  uint32_t height;         /* 1 + the tallest kid: bounds eval's recursion (AST_MAX_HEIGHT) */
  AstNode **kids;
};

/* A growing list used while parsing (arena memory). */
typedef struct NodeList { AstNode **items; uint32_t n, cap; } NodeList;

typedef struct Arena { struct ArenaBlock *head; } Arena;
void *arena_alloc(Arena *a, size_t n);
void arena_free(Arena *a);

/* One parsed program. Refcounted: the interpreter and every closure made from it hold one. */
typedef struct Chunk {
  int refcount;
  struct Source *src;      /* retained */
  Arena arena;
  AstNode *root;           /* an AST_BLOCK */
  FuncInfo top;            /* the top level: no slots, names are global */
  bool dml;                /* parsed as a .dml file (DML's rules: parse.c) */
} Chunk;

void chunk_retain(struct Chunk *c);
void chunk_release(struct Chunk *c);

const char *ast_kind_name(int kind);
/* Writes an S-expression of the tree, for tests: (+ 1 (* 2 3)). */
void ast_dump(const AstNode *n, char *buf, size_t cap);

#endif
