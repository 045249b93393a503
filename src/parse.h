/*
** parse.h — the parser driver (sqlite3RunParser model): lexes, applies the newline rules
** of LANGUAGE.md §2, feeds Lemon, and records the first error with its span. It never
** longjmps out of Lemon; the parser is freed on every path.
*/
#ifndef MLS_PARSE_H
#define MLS_PARSE_H

#include "ast.h"
#include "lex.h"

struct SymTab;

typedef struct Parse {
  struct Chunk *chunk;
  struct SymTab *syms;
  AstNode *root;
  Token last;              /* the token being fed (for stack-overflow reports) */
  Span whole;
  int nerr;
  bool at_eof;             /* the error is "unexpected end of input": the REPL reads more */
  bool dml;                /* a .dml file: DML's newline rule, and X[i] is row i of a matrix */
  Span err_span;
  char err[256];
  int nwarn;               /* warnings: the first is kept (a .dml file's stray '.') */
  Span warn_span;
  char warn[160];
} Parse;

/* Parses src into a new Chunk (returned +1, NULL on error with *err filled). */
/* oom: out of memory, not a syntax error. A parse that succeeds may still leave a warning in
** warn (nwarn > 0: how many; the first at warn_span), which the caller reports. */
typedef struct ParseError { bool at_eof; bool oom; Span span; char msg[256]; int nwarn; Span warn_span; char warn[160]; } ParseError;
/* spare: where the caller keeps Lemon's parser (about 600 KB) from one parse to the next (*spare
** NULL at first; the interpreter's I->spare_parser), or NULL to allocate one per parse. */
struct Chunk *parse_chunk(struct SymTab *syms, void **spare, struct Source *src, ParseError *err);
/* Frees the parser kept in *spare and sets it to NULL (interp_free). */
void parse_free_spare(void **spare);

/* Used by grammar actions and ast.c. */
void parse_syntax_error(Parse *P, int major, Token tok);
void parse_error_at(Parse *P, Token tok, const char *msg);
void parse_error_span(Parse *P, Span sp, const char *fmt, ...);
/* A comparison L op R; a chain (a < b < c, left to right) only in a .dml file, as DML's grammar. */
AstNode *parse_compare(Parse *P, int op, AstNode *l, Token t, AstNode *r);
/* Checks DML's loop options of for/parfor (names, and constant values); they are not kept. */
bool parse_loop_options(Parse *P, NodeList *opts);   /* true: mode=REMOTE... (src/mpi/parfor.c) */

#endif

/* Tree constructors called by the grammar actions (ast.c). Nodes go to P->chunk's arena. */
NodeList *ast_list_new(Parse *P);
void ast_list_add(Parse *P, NodeList *l, AstNode *n);
Span ast_span2(Token a, Token b);
AstNode *ast_block(Parse *P, NodeList *stmts, Span sp);
AstNode *ast_assign(Parse *P, AstNode *lhs, AstNode *rhs);
AstNode *ast_if(Parse *P, Token t, AstNode *c, AstNode *then, AstNode *els);
AstNode *ast_while(Parse *P, Token t, AstNode *c, AstNode *body);
AstNode *ast_for(Parse *P, Token t, Token var, AstNode *iter, AstNode *body);
AstNode *ast_leaf(Parse *P, int kind, Token t);
AstNode *ast_source_as(Parse *P, AstNode *call, Token name);
AstNode *ast_num(Parse *P, Token t);
AstNode *ast_str(Parse *P, Token t);
AstNode *ast_bool(Parse *P, Token t, bool b);
AstNode *ast_null(Parse *P, Token t);
AstNode *ast_const(Parse *P, Token t, double x);
AstNode *ast_name(Parse *P, Token t);
AstNode *ast_param(Parse *P, Token dollar, Token t);
AstNode *ast_nsref(Parse *P, Token ns, Token name);
AstNode *ast_paren(Parse *P, AstNode *e, Token l, Token r);
AstNode *ast_matrix(Parse *P, NodeList *rows, Span sp);
AstNode *ast_row(Parse *P, NodeList *elems);
AstNode *ast_call(Parse *P, AstNode *fn, NodeList *args, Token rp);
AstNode *ast_index(Parse *P, AstNode *x, NodeList *ix, Token rb);
AstNode *ast_member(Parse *P, AstNode *x, Token name);
AstNode *ast_return(Parse *P, Token t, AstNode *e, Token rp);
AstNode *ast_function(Parse *P, Token t, NodeList *params, NodeList *rets, AstNode *body);
AstNode *ast_binary(Parse *P, int kind, int op, AstNode *l, AstNode *r);
AstNode *ast_unary(Parse *P, Token t, int op, AstNode *e);
AstNode *ast_named_arg(Parse *P, Token name, AstNode *e);
/* `name =` with no value (switch's fall-through alternative): an AST_F_EMPTY argument. */
AstNode *ast_empty_arg(Parse *P, Token name, Token eq);
AstNode *ast_param_def(Parse *P, const Token *type, Token name, AstNode *dflt);
