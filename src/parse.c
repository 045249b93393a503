/*
** parse.c — the driver between lexer and Lemon (sqlite3RunParser model). The lexer's
** tokens are gathered first, so the newline rules of LANGUAGE.md §2 can look ahead:
** a newline is dropped inside ( ) and [ ], after an operator, ',' or 'else', after the
** header of if/while/for/function, and before an 'else'. Lemon never sees a dropped one.
** A .dml file also drops the newline before a line that DML's grammar would continue.
*/
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "diag.h"
#include "mem.h"
#include "parse.h"
#include "parser.h"
#include "sym.h"

size_t mlsParserSize(void);
void mlsParserInit(void *p);
void mlsParserFinalize(void *p);
void mlsParser(void *p, int major, Token minor, Parse *P);

void parse_error_span(Parse *P, Span sp, const char *fmt, ...) {
  if (P->nerr++) return;                      /* the first error wins */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(P->err, sizeof P->err, fmt, ap);
  va_end(ap);
  P->err_span = sp;
}

void parse_error_at(Parse *P, Token tok, const char *msg) {
  Span sp = { tok.start, tok.end };
  parse_error_span(P, sp, "%s", msg);
}

static void describe_token(Parse *P, int kind, Token tok, char *buf, size_t n) {
  const char *text = P->chunk->src->text + tok.start;
  uint32_t len = tok.end - tok.start;
  if ((kind == TK_NAME || kind == TK_NUM) && len < 40)
    snprintf(buf, n, "'%.*s'", (int)len, text);
  else if (kind == TK_STR && len < 40)
    snprintf(buf, n, "string %.*s", (int)len, text);
  else
    snprintf(buf, n, "%s", lex_token_name(kind));
}

void parse_syntax_error(Parse *P, int major, Token tok) {
  char what[64];
  if (major == 0) {
    P->at_eof = true;
    Span sp = { tok.start, tok.end };
    parse_error_span(P, sp, "unexpected end of input");
    return;
  }
  describe_token(P, major, tok, what, sizeof what);
  Span sp = { tok.start, tok.end };
  parse_error_span(P, sp, "unexpected %s", what);
}

/* A comparison. DML's grammar reads a < b < c as (a < b) < c, the first result as 0 or 1
** (SystemDS's mdedup.dml: `0 > (p + q) > d`); R's does not, so outside a .dml file a chain
** is a syntax error at its second operator (parenthesize the first comparison to mean it). */
AstNode *parse_compare(Parse *P, int op, AstNode *l, Token t, AstNode *r) {
  if (!P->dml && l->kind == AST_BINARY && l->op >= OP_EQ && l->op <= OP_GE && !(l->flags & AST_F_PAREN))
    parse_syntax_error(P, t.kind, t);
  return ast_binary(P, AST_BINARY, op, l, r);
}

/* DML's loop options (SystemDS's ParForStatementBlock): a name from this list, each once, with
** a constant value that is never evaluated (mode=LOCAL names no variable). MLS runs every
** iteration in order, so the options change nothing; checking them still catches typos. The one
** exception: true when mode is REMOTE (or REMOTE_SPARK...): under mpirun such a parfor spreads
** its iterations over the ranks (src/mpi/parfor.c). */
bool parse_loop_options(Parse *P, NodeList *opts) {
  bool remote = false;
  static const char *const known[] = { "check", "par", "mode", "opt", "taskpartitioner", "tasksize",
                                       "datapartitioner", "resultmerge", "log", "profile", NULL };
  for (uint32_t i = 0; i < opts->n; i++) {
    AstNode *a = opts->items[i], *v = a->kids[0];
    const char *name = a->u.sym->name;
    Span at = { a->span.start, a->span.start + (uint32_t)strlen(name) };
    int k = 0;
    while (known[k] && strcmp(known[k], name) != 0) k++;
    if (!known[k]) {
      parse_error_span(P, at, "unknown loop option '%s' (DML's are check, par, mode, opt, taskpartitioner, "
                       "tasksize, datapartitioner, resultmerge, log and profile)", name);
      return false;
    }
    for (uint32_t j = 0; j < i; j++)
      if (opts->items[j]->u.sym == a->u.sym) { parse_error_span(P, at, "loop option '%s' given twice", name); return false; }
    bool cl = v->kind == AST_CLPARAM;       /* $x: a -nvargs value, as in SystemDS */
    if (v->kind != AST_NUM && v->kind != AST_STR && v->kind != AST_NAME && v->kind != AST_BOOL && !cl) {
      parse_error_span(P, v->span, "loop option '%s' must be a constant (a number, a name or a $param)", name);
      return false;
    }
    if (!strcmp(name, "check") && !cl && !(v->kind == AST_NUM && (v->u.num == 0 || v->u.num == 1))) {
      parse_error_span(P, v->span, "loop option 'check' must be 0 or 1");
      return false;
    }
    if (!strcmp(name, "mode") && v->kind == AST_NAME && !strncmp(v->u.sym->name, "REMOTE", 6)) remote = true;
    if ((!strcmp(name, "par") || !strcmp(name, "tasksize")) && !cl &&
        !(v->kind == AST_NUM && v->u.num >= 1 && v->u.num < 9.2e18 && v->u.num == floor(v->u.num))) {
      parse_error_span(P, v->span, "loop option '%s' must be a positive integer", name);
      return false;
    }
  }
  return remote;
}

/* Tokens after which a newline cannot end a statement. */
static bool continues_line(int k) {
  switch (k) {
  case TK_NEWLINE: case TK_SEMI: case TK_LBRACE: case TK_COMMA: case TK_ELSE:
  case TK_PLUS: case TK_MINUS: case TK_STAR: case TK_SLASH: case TK_CARET:
  case TK_MATMUL: case TK_MOD: case TK_INTDIV: case TK_COLON:
  case TK_EQ: case TK_NE: case TK_LT: case TK_LE: case TK_GT: case TK_GE:
  case TK_AND: case TK_OR: case TK_ANDAND: case TK_OROR: case TK_NOT:
  case TK_ASSIGN: case TK_LARROW: case TK_DOLLAR: case TK_COLONCOLON: case TK_AS: case TK_IN:
    return true;
  default:
    return false;
  }
}

/* DML's grammar skips newlines: in a .dml file a line continues the expression before it when
** it starts with a token that cannot start a DML statement: a binary operator (also + and -),
** '=' / '<-' / '+=', or a call's '('. A '[' still starts a line ([a, b] = f() is a statement). */
static bool dml_continues(int k) {
  switch (k) {
  case TK_PLUS: case TK_MINUS: case TK_STAR: case TK_SLASH: case TK_CARET:
  case TK_MATMUL: case TK_MOD: case TK_INTDIV: case TK_COLON:
  case TK_EQ: case TK_NE: case TK_LT: case TK_LE: case TK_GT: case TK_GE:
  case TK_AND: case TK_OR: case TK_ANDAND: case TK_OROR:
  case TK_ASSIGN: case TK_LARROW: case TK_PLUSEQ: case TK_LP:
    return true;
  default:
    return false;
  }
}

/* Tokens that start a statement and cannot go on from a '}' on the same line in DML, which has
** no block expressions: there a new statement starts right after the brace. */
static bool starts_statement(int k) {
  switch (k) {
  case TK_NAME: case TK_IF: case TK_WHILE: case TK_FOR: case TK_PARFOR: case TK_LB:
    return true;
  default:
    return false;
  }
}

/* The first warning of a parse (a later one is dropped): reported with the chunk, which runs. */
static void parse_warning(Parse *P, Token tok, const char *msg) {
  if (P->nwarn++) return;
  snprintf(P->warn, sizeof P->warn, "%s", msg);
  P->warn_span = (Span){ tok.start, tok.end };
}

/* A file named *.dml parses with DML's newline rule; anything else (.mls, -e, the REPL) with R's. */
static bool is_dml_source(const Source *src) {
  size_t n = strlen(src->name);
  return n > 4 && strcasecmp(src->name + n - 4, ".dml") == 0;
}

typedef struct Open { int kind; int opener; uint32_t at; } Open;  /* opener: token before '(' */

typedef struct TokVec { Token *t; uint32_t n, cap; } TokVec;

static void tv_push(TokVec *v, Token t) {
  if (v->n == v->cap) {
    v->cap = v->cap ? v->cap * 2 : 256;
    v->t = mem_realloc(v->t, v->cap * sizeof(Token));
  }
  v->t[v->n++] = t;
}

/* Index of the next token at or after i that is not a newline (or SEMI too, if semis). */
static uint32_t next_sig(const TokVec *v, uint32_t i, bool semis) {
  while (i < v->n && (v->t[i].kind == TK_NEWLINE || (semis && v->t[i].kind == TK_SEMI))) i++;
  return i;
}

/* After the ')' of a function's parameters: is "return (...)" a DML result list? It is when
** the list starts with a typed name ("double n", "matrix[double] Y"): two names in a row,
** which an R-style "return(expr)" body can never start with. */
static void mark_dml_returns(TokVec *v, uint32_t rp) {
  uint32_t k = next_sig(v, rp + 1, false);
  if (k + 1 >= v->n || v->t[k].kind != TK_RETURN || v->t[k + 1].kind != TK_LP) return;
  int t[5];                                  /* the list's first tokens; it may start on the next line */
  for (uint32_t i = 0, j = k + 2; i < 5; i++) {
    j = next_sig(v, j, false);
    t[i] = j < v->n ? v->t[j++].kind : TK_EOF;
  }
  bool typed = t[0] == TK_NAME &&
               (t[1] == TK_NAME || (t[1] == TK_LB && t[2] == TK_NAME && t[3] == TK_RB && t[4] == TK_NAME));
  if (typed) v->t[k].kind = TK_RETURNS;
}

static bool lex_all(Parse *P, TokVec *v) {
  Lexer lx;
  lex_init(&lx, P->chunk->src->text, P->chunk->src->len);
  for (;;) {
    Token t;
    lex_next(&lx, &t);
    if (t.kind == TK_ILLEGAL) {
      const char *text = P->chunk->src->text;
      unsigned char c = (unsigned char)text[t.start];
      Span sp = { t.start, t.end };
      if (strcmp(lx.err, "unexpected character") == 0 && isprint(c))
        parse_error_span(P, sp, "unexpected character '%c'", c);
      else if (strcmp(lx.err, "unknown operator") == 0)
        parse_error_span(P, sp, "unknown operator '%.*s'", (int)(t.end - t.start), text + t.start);
      else if (strcmp(lx.err, "unterminated string") == 0)
        sp.end = sp.start + 1, parse_error_span(P, sp, "%s", lx.err);
      else
        parse_error_span(P, sp, "%s", lx.err);
      return false;
    }
    tv_push(v, t);
    if (t.kind == TK_EOF) return true;
  }
}

/* What parse_chunk must free if an allocation fails half way (parse_run fills it in). */
typedef struct ParseJob {
  Chunk *ch;
  Parse P;
  TokVec v;
  Open *stack;
  void *parser;
  void **spare;            /* where the caller keeps a parser between parses, or NULL */
  jmp_buf oom;
  size_t oom_bytes;
} ParseJob;

static void parse_oom(void *ud, size_t n) {
  ParseJob *j = ud;
  j->oom_bytes = n;
  longjmp(j->oom, 1);
}

/* Lemon's parser lives in memory of ours, from the checked allocator, so that a failure takes
** the path above. It is large (its stack has %stack_size entries, about 600 KB) and every parse
** needs one, so the caller may keep the last one for its next parse (*spare, the interpreter's;
** parse_free_spare frees it): a fresh one per REPL line, source() or fuzzing input was mapped
** and zeroed anew each time. */
static void *parser_new(void **spare) {
  void *p = spare && *spare ? *spare : mem_alloc(mlsParserSize());
  if (spare) *spare = NULL;
  mlsParserInit(p);
  return p;
}

static void parser_done(void *p, void **spare) {
  mlsParserFinalize(p);
  if (spare && !*spare) *spare = p;
  else mem_free(p);
}

void parse_free_spare(void **spare) {
  mem_free(*spare);
  *spare = NULL;
}

static Chunk *parse_run(ParseJob *J, SymTab *syms, Source *src, ParseError *err) __attribute__((noinline));

/* Parses src. A failed allocation anywhere inside (the lexer's token list, the tree's arena,
** Lemon's parser, a new symbol) is reported as an error at the last token read, with everything
** made so far freed: the allocator's hook longjmps here (never through the caller's frames). */
Chunk *parse_chunk(SymTab *syms, void **spare, Source *src, ParseError *err) {
  ParseJob j;
  memset(&j, 0, sizeof j);
  j.spare = spare;
  MemOomHook old = mem_set_oom_handler((MemOomHook){ parse_oom, &j });
  Chunk *ch = NULL;
  if (setjmp(j.oom) == 0) {
    ch = parse_run(&j, syms, src, err);
  } else {
    if (j.parser) parser_done(j.parser, spare);
    mem_free(j.v.t);
    mem_free(j.stack);
    chunk_release(j.ch);
    if (err) {
      char size[32];
      err->at_eof = false;
      err->oom = true;
      err->span = (Span){ j.P.last.start, j.P.last.end };
      snprintf(err->msg, sizeof err->msg, "out of memory while parsing (allocating %s)",
               mem_format_size(size, sizeof size, j.oom_bytes));
    }
  }
  mem_set_oom_handler(old);
  return ch;
}

/* How many times the file's own scope (not a function's) assigns name s: assignments, [a, b] =
** targets and for variables (counting stops at 2). */
static int assigned(const AstNode *n, const Symbol *s, int k) {
  if (!n || k > 1 || n->kind == AST_FUNCTION) return k;
  if (n->kind == AST_ASSIGN) {
    const AstNode *t = n->kids[0];
    while (t->kind == AST_INDEX || t->kind == AST_MEMBER) t = t->kids[0];
    if (t->kind == AST_NAME && t->u.sym == s) k++;
  } else if (n->kind == AST_MASSIGN) {
    for (uint32_t i = 0; i + 1 < n->nkids; i++) k += n->kids[i]->u.sym == s;
  } else if (n->kind == AST_FOR) {
    k += n->kids[0]->u.sym == s;
  }
  for (uint32_t i = 0; i < n->nkids && k <= 1; i++) k = assigned(n->kids[i], s, k);
  return k;
}

/* DML's function hoisting (ast.h AST_F_HOISTED): a top-level `name = function ...` of a .dml
** file whose name the file's scope assigns nowhere else. A name defined twice, or also given
** another value, keeps R's order (MLS's own scripts redefine helpers; SystemDS rejects that). */
static void mark_hoisted(AstNode *root) {
  for (uint32_t i = 0; i < root->nkids; i++) {
    AstNode *s = root->kids[i];
    if (s->kind == AST_ASSIGN && s->kids[0]->kind == AST_NAME && s->kids[1]->kind == AST_FUNCTION &&
        assigned(root, s->kids[0]->u.sym, 0) == 1)
      s->flags |= AST_F_HOISTED;
  }
}

static Chunk *parse_run(ParseJob *J, SymTab *syms, Source *src, ParseError *err) {
  J->ch = mem_calloc(1, sizeof *J->ch);
  Chunk *ch = J->ch;
  ch->refcount = 1;
  ch->src = src;
  source_retain(src);
  J->P.chunk = ch;
  J->P.syms = syms;
  J->P.whole.start = 0;
  J->P.whole.end = src->len;
  uint32_t depth = 0, cap = 0;
  J->parser = parser_new(J->spare);

  J->P.dml = is_dml_source(src);
  if (lex_all(&J->P, &J->v)) {
    bool dml = J->P.dml;
    int prev = TK_NEWLINE;
    bool header_pending = false;
    Token last = { TK_NEWLINE, 0, 0 };
    for (uint32_t i = 0; i < J->v.n && !J->P.nerr; i++) {
      Token t = J->v.t[i];
      int top = depth ? J->stack[depth - 1].kind : 0;
      if (t.kind == TK_EOF) break;
      if (t.kind == TK_NEWLINE) {
        if (top == TK_LP || top == TK_LB || header_pending || continues_line(prev)) continue;
        uint32_t j = next_sig(&J->v, i + 1, false);
        if (J->v.t[j].kind == TK_ELSE) continue;
        if (dml && (dml_continues(J->v.t[j].kind) || (prev == TK_RP && J->v.t[j].kind == TK_NAME && j + 1 < J->v.n &&
                    J->v.t[j].end - J->v.t[j].start == 2 && memcmp(src->text + J->v.t[j].start, "as", 2) == 0 &&
                    J->v.t[j + 1].kind == TK_NAME)))
          continue;                          /* DML: the next line goes on (x = a\n  + b; source(f)\nas m) */
      } else if (t.kind == TK_SEMI && top != TK_LB) {
        uint32_t j = next_sig(&J->v, i + 1, true);
        if (dml && top == TK_LP && J->v.t[j].kind == TK_RP) continue;   /* DML: f(a, n = g(x);) (bandit.dml) */
        if (J->v.t[j].kind == TK_ELSE) continue;
        if (prev == TK_SEMI || prev == TK_NEWLINE) { /* keep: empty statements are fine */ }
      } else if (t.kind == TK_LP || t.kind == TK_LB || t.kind == TK_LBRACE) {
        if (depth == cap) { cap = cap ? cap * 2 : 16; J->stack = mem_realloc(J->stack, cap * sizeof(Open)); }
        J->stack[depth].kind = t.kind;
        J->stack[depth].opener = prev;
        J->stack[depth].at = t.start;
        depth++;
      } else if (t.kind == TK_RP || t.kind == TK_RB || t.kind == TK_RBRACE) {
        int want = t.kind == TK_RP ? TK_LP : t.kind == TK_RB ? TK_LB : TK_LBRACE;
        if (depth && J->stack[depth - 1].kind == want) {
          int opener = J->stack[--depth].opener;
          if (t.kind == TK_RP) {
            if (opener == TK_FUNCTION) mark_dml_returns(&J->v, i);
            if (opener == TK_IF || opener == TK_WHILE || opener == TK_FOR || opener == TK_PARFOR ||
                opener == TK_FUNCTION || opener == TK_RETURNS) {
              J->P.last = t;
              mlsParser(J->parser, t.kind, t, &J->P);
              prev = t.kind;
              last = t;
              header_pending = true;
              continue;
            }
          }
        }
      } else if (t.kind == TK_COLON && depth &&
                 ((top == TK_LB && (J->stack[depth - 1].opener == TK_NAME || J->stack[depth - 1].opener == TK_RP ||
                                    J->stack[depth - 1].opener == TK_RB)) ||
                  (top == TK_LP && (J->stack[depth - 1].opener == TK_FOR || J->stack[depth - 1].opener == TK_PARFOR)))) {
        t.kind = TK_IXCOLON;                 /* an index's or a for header's top-level ':' (DML) */
      } else if (t.kind == TK_NAME && prev == TK_RP && t.end - t.start == 2 &&
                 memcmp(src->text + t.start, "as", 2) == 0 && J->v.t[i + 1].kind == TK_NAME) {
        t.kind = TK_AS;
      }
      if (dml && t.kind == TK_BREAK && (J->v.t[next_sig(&J->v, i + 1, false)].kind == TK_ASSIGN ||
                                        (prev != TK_NEWLINE && prev != TK_SEMI && prev != TK_LBRACE &&
                                         prev != TK_RBRACE && prev != TK_ELSE && prev != TK_RP)))
        t.kind = TK_NAME;                    /* DML has no break: `break = FALSE; while (!break)` is a variable */
      if (dml && t.kind == TK_NAME && t.end - t.start == 1 && src->text[t.start] == '.') {
        parse_warning(&J->P, t, "stray '.' ignored (SystemDS's lexer drops a '.' that starts no number or name)");
        continue;                            /* stop("...").  (SystemDS's sliceLineExtract.dml) */
      }
      J->P.last = t;
      mlsParser(J->parser, t.kind, t, &J->P);
      prev = t.kind;
      if (t.kind != TK_NEWLINE && t.kind != TK_SEMI) last = t;
      header_pending = false;
      if (dml && t.kind == TK_RBRACE && (!depth || J->stack[depth - 1].kind == TK_LBRACE) &&
          starts_statement(J->v.t[i + 1].kind)) {
        Token nl = { TK_NEWLINE, t.end, t.end };   /* DML: "} if (b) {...}": a statement may follow '}' */
        mlsParser(J->parser, TK_NEWLINE, nl, &J->P);
        prev = TK_NEWLINE;
      }
    }
    if (!J->P.nerr) {
      Token end = { 0, src->len, src->len };
      bool in_parens = depth && J->stack[depth - 1].kind != TK_LBRACE;
      if (!in_parens && !header_pending && (!continues_line(prev) || prev == TK_SEMI)) {
        Token nl = { TK_NEWLINE, src->len, src->len };
        mlsParser(J->parser, TK_NEWLINE, nl, &J->P);
      }
      if (!J->P.nerr) {
        end.start = end.end = last.end;
        mlsParser(J->parser, 0, end, &J->P);
      }
      if (J->P.nerr && J->P.at_eof && depth) {
        uint32_t line, col;
        diag_locate(src, J->stack[depth - 1].at, &line, &col);
        size_t k = strlen(J->P.err);
        snprintf(J->P.err + k, sizeof J->P.err - k, " (%s at line %u is not closed)",
                 lex_token_name(J->stack[depth - 1].kind), line);
      }
    }
  }
  parser_done(J->parser, J->spare);
  J->parser = NULL;
  mem_free(J->v.t);
  J->v.t = NULL;
  mem_free(J->stack);
  J->stack = NULL;
  if (J->P.nerr || !J->P.root) {
    if (err) {
      err->at_eof = J->P.at_eof;
      err->oom = false;
      err->span = J->P.err_span;
      snprintf(err->msg, sizeof err->msg, "%s", J->P.nerr ? J->P.err : "empty program");
    }
    chunk_release(ch);
    J->ch = NULL;
    return NULL;
  }
  ch->root = J->P.root;
  ch->dml = J->P.dml;
  if (err) {
    err->nwarn = J->P.nwarn;
    err->warn_span = J->P.warn_span;
    snprintf(err->warn, sizeof err->warn, "%s", J->P.warn);
  }
  if (J->P.dml) mark_hoisted(ch->root);
  ch->top.chunk = ch;
  ch->top.body = J->P.root;
  return ch;
}
