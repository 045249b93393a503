/*
** ast.c — arenas, chunks and the tree constructors the grammar calls. Constructors only
** build; the few checks they make (assignment targets, parameter lists, type names) record
** a located error in the Parse and return a harmless node.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ast.h"
#include "diag.h"
#include "mem.h"
#include "parse.h"
#include "sym.h"

/* ---- arena ---- */
typedef struct ArenaBlock { struct ArenaBlock *next; size_t used, cap; max_align_t data[]; } ArenaBlock;

void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  ArenaBlock *b = a->head;
  if (!b || b->used + n > b->cap) {
    size_t cap = n > 16384 ? n : 16384;
    b = mem_alloc(sizeof *b + cap);
    b->next = a->head;
    b->used = 0;
    b->cap = cap;
    a->head = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

void arena_free(Arena *a) {
  ArenaBlock *b = a->head;
  while (b) { ArenaBlock *nx = b->next; mem_free(b); b = nx; }
  a->head = NULL;
}

void chunk_retain(Chunk *c) { c->refcount++; }

void chunk_release(Chunk *c) {
  if (!c || --c->refcount > 0) return;
  arena_free(&c->arena);
  source_release(c->src);
  mem_free(c);
}

/* ---- helpers ---- */
static AstNode *node(Parse *P, int kind, Span sp, uint32_t nkids) {
  AstNode *n = arena_alloc(&P->chunk->arena, sizeof *n);
  n->kind = (uint8_t)kind;
  n->span = sp;
  n->slot = -1;
  n->nkids = nkids;
  if (nkids) n->kids = arena_alloc(&P->chunk->arena, nkids * sizeof(AstNode *));
  return n;
}

/* Sets n's height from its kids; reports trees too tall to evaluate safely. */
static AstNode *tall(Parse *P, AstNode *n) {
  uint32_t h = 0;
  for (uint32_t i = 0; i < n->nkids; i++)
    if (n->kids[i] && n->kids[i]->height > h) h = n->kids[i]->height;
  if (n->kind == AST_FUNCTION && n->u.fn->body && n->u.fn->body->height > h) h = n->u.fn->body->height;
  n->height = h + 1;
  if (n->height > AST_MAX_HEIGHT) parse_error_span(P, n->span, "expression nested too deeply");
  return n;
}

static Span tspan(Token t) { Span s = { t.start, t.end }; return s; }
Span ast_span2(Token a, Token b) { Span s = { a.start, b.end }; return s; }
static const char *ttext(Parse *P, Token t) { return P->chunk->src->text + t.start; }
static struct Symbol *tsym(Parse *P, Token t) { return sym_intern(P->syms, ttext(P, t), t.end - t.start); }

NodeList *ast_list_new(Parse *P) { return arena_alloc(&P->chunk->arena, sizeof(NodeList)); }

void ast_list_add(Parse *P, NodeList *l, AstNode *n) {
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? l->cap * 2 : 4;
    AstNode **it = arena_alloc(&P->chunk->arena, cap * sizeof(AstNode *));
    if (l->n) memcpy(it, l->items, l->n * sizeof(AstNode *));
    l->items = it;
    l->cap = cap;
  }
  l->items[l->n++] = n;
}

/* ---- constructors ---- */
AstNode *ast_block(Parse *P, NodeList *stmts, Span sp) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < stmts->n; i++) k += stmts->items[i] != NULL;
  AstNode *n = node(P, AST_BLOCK, sp, k);
  k = 0;
  for (uint32_t i = 0; i < stmts->n; i++)
    if (stmts->items[i]) n->kids[k++] = stmts->items[i];
  return tall(P, n);
}

static bool is_lvalue(const AstNode *n) {
  while (n->kind == AST_INDEX || n->kind == AST_MEMBER) {
    if (n->flags & AST_F_PAREN) return false;
    n = n->kids[0];
  }
  return n->kind == AST_NAME && !(n->flags & AST_F_PAREN);
}

AstNode *ast_assign(Parse *P, AstNode *lhs, AstNode *rhs) {
  Span sp = span_join(lhs->span, rhs->span);
  if (lhs->kind == AST_MATRIX && lhs->nkids == 1 && !(lhs->flags & AST_F_PAREN)) {
    AstNode *row = lhs->kids[0];                 /* [a, b] = f(x) */
    AstNode *n = node(P, AST_MASSIGN, sp, row->nkids + 1);
    for (uint32_t i = 0; i < row->nkids; i++) {
      if (!is_lvalue(row->kids[i]) || row->kids[i]->kind != AST_NAME)
        parse_error_span(P, row->kids[i]->span, "invalid target in multiple assignment (a name expected)");
      n->kids[i] = row->kids[i];
    }
    n->kids[row->nkids] = rhs;
    if (P->dml) n->flags |= AST_F_DMLMULTI;
    return tall(P, n);
  }
  if (lhs->kind == AST_CALL && lhs->nkids == 2 && !(lhs->flags & AST_F_PAREN) && lhs->kids[0]->kind == AST_NAME &&
      !strcmp(lhs->kids[0]->u.sym->name, "names") && lhs->kids[1] && lhs->kids[1]->kind == AST_NAME &&
      !(lhs->kids[1]->flags & AST_F_PAREN)) {   /* R's replacement form: names(x) = v is x = `names<-`(x, v) */
    AstNode *x = lhs->kids[1];
    AstNode *fn = node(P, AST_NAME, lhs->kids[0]->span, 0);
    fn->u.sym = sym_intern(P->syms, "names<-", 7);
    AstNode *rd = node(P, AST_NAME, x->span, 0);
    rd->u.sym = x->u.sym;
    AstNode *call = node(P, AST_CALL, sp, 3);
    call->kids[0] = tall(P, fn);
    call->kids[1] = tall(P, rd);
    call->kids[2] = rhs;
    rhs = tall(P, call);
    lhs = x;
  }
  if (!is_lvalue(lhs)) parse_error_span(P, lhs->span, "invalid assignment target");
  if (P->dml && rhs->kind == AST_CALL) rhs->flags |= AST_F_DMLFIRST;   /* x = f(): f's first result */
  if (rhs->kind == AST_FUNCTION && lhs->kind == AST_NAME && !rhs->u.fn->name)
    rhs->u.fn->name = lhs->u.sym;
  AstNode *n = node(P, AST_ASSIGN, sp, 2);
  n->kids[0] = lhs;
  n->kids[1] = rhs;
  return tall(P, n);
}

AstNode *ast_if(Parse *P, Token t, AstNode *c, AstNode *then, AstNode *els) {
  AstNode *n = node(P, AST_IF, span_join(tspan(t), (els ? els : then)->span), els ? 3 : 2);
  n->kids[0] = c;
  n->kids[1] = then;
  if (els) n->kids[2] = els;
  return tall(P, n);
}

AstNode *ast_while(Parse *P, Token t, AstNode *c, AstNode *body) {
  AstNode *n = node(P, AST_WHILE, span_join(tspan(t), body->span), 2);
  n->kids[0] = c;
  n->kids[1] = body;
  return tall(P, n);
}

AstNode *ast_for(Parse *P, Token t, Token var, AstNode *iter, AstNode *body) {
  AstNode *n = node(P, AST_FOR, span_join(tspan(t), body->span), 3);
  n->kids[0] = ast_name(P, var);
  n->kids[1] = iter;
  n->kids[2] = body;
  return tall(P, n);
}

AstNode *ast_leaf(Parse *P, int kind, Token t) { return node(P, kind, tspan(t), 0); }

/* The name "ns::" under which namespace ns is bound (sym_namespace), resolved as any name. */
static AstNode *ns_name(Parse *P, struct Symbol *ns, Span sp) {
  AstNode *n = node(P, AST_NAME, sp, 0);
  n->u.sym = sym_namespace(P->syms, ns);
  return tall(P, n);
}

AstNode *ast_source_as(Parse *P, AstNode *call, Token name) {
  if (call->kind != AST_CALL || call->kids[0]->kind != AST_NAME ||
      strcmp(call->kids[0]->u.sym->name, "source") != 0)
    parse_error_span(P, call->span, "'as' is only allowed after source(...)");
  AstNode *n = node(P, AST_SOURCE_AS, span_join(call->span, tspan(name)), 2);
  n->kids[0] = call;
  n->u.sym = tsym(P, name);
  n->kids[1] = ns_name(P, n->u.sym, tspan(name));
  return tall(P, n);
}

AstNode *ast_num(Parse *P, Token t) {
  AstNode *n = node(P, AST_NUM, tspan(t), 0);
  n->u.num = strtod(ttext(P, t), NULL);
  return tall(P, n);
}

AstNode *ast_str(Parse *P, Token t) {
  AstNode *n = node(P, AST_STR, tspan(t), 0);
  const char *s = ttext(P, t) + 1;
  uint32_t len = t.end - t.start - 2, k = 0;
  char *d = arena_alloc(&P->chunk->arena, len + 1);
  for (uint32_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == '\\' && i + 1 < len) {
      c = s[++i];
      switch (c) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      default: break;             /* \\ \" \' stand for themselves (the lexer checked) */
      }
    }
    d[k++] = c;
  }
  d[k] = '\0';
  n->u.str.s = d;
  n->u.str.len = k;
  return tall(P, n);
}

AstNode *ast_null(Parse *P, Token t) { return tall(P, node(P, AST_NULL, tspan(t), 0)); }

AstNode *ast_bool(Parse *P, Token t, bool b) {
  AstNode *n = node(P, AST_BOOL, tspan(t), 0);
  n->u.num = b;
  return tall(P, n);
}

AstNode *ast_const(Parse *P, Token t, double x) {
  AstNode *n = node(P, AST_NUM, tspan(t), 0);
  n->u.num = x;
  return tall(P, n);
}

AstNode *ast_name(Parse *P, Token t) {
  AstNode *n = node(P, AST_NAME, tspan(t), 0);
  n->u.sym = tsym(P, t);
  return tall(P, n);
}

AstNode *ast_param(Parse *P, Token dollar, Token t) {
  AstNode *n = node(P, AST_CLPARAM, ast_span2(dollar, t), 0);
  n->u.sym = tsym(P, t);
  return tall(P, n);
}

AstNode *ast_nsref(Parse *P, Token ns, Token name) {
  AstNode *n = node(P, AST_NSREF, ast_span2(ns, name), 1);
  n->u.sym = tsym(P, ns);
  n->sym2 = tsym(P, name);
  n->kids[0] = ns_name(P, n->u.sym, tspan(ns));
  return tall(P, n);
}

AstNode *ast_paren(Parse *P, AstNode *e, Token l, Token r) {
  (void)P;
  e->flags |= AST_F_PAREN;
  e->span = ast_span2(l, r);
  return e;
}

AstNode *ast_row(Parse *P, NodeList *elems) {
  AstNode *n = node(P, AST_ROW, span_join(elems->items[0]->span, elems->items[elems->n - 1]->span), elems->n);
  memcpy(n->kids, elems->items, elems->n * sizeof(AstNode *));
  return tall(P, n);
}

AstNode *ast_matrix(Parse *P, NodeList *rows, Span sp) {
  AstNode *n = node(P, AST_MATRIX, sp, rows ? rows->n : 0);
  if (rows) memcpy(n->kids, rows->items, rows->n * sizeof(AstNode *));
  return tall(P, n);
}

AstNode *ast_call(Parse *P, AstNode *fn, NodeList *args, Token rp) {
  AstNode *n = node(P, AST_CALL, span_join(fn->span, tspan(rp)), args->n + 1);
  n->kids[0] = fn;
  for (uint32_t i = 0; i < args->n; i++) {
    AstNode *a = args->items[i];
    for (uint32_t j = 0; a->kind == AST_ARG && j < i; j++)
      if (args->items[j]->kind == AST_ARG && args->items[j]->u.sym == a->u.sym)
        parse_error_span(P, a->span, "argument '%s' given twice", a->u.sym->name);
    n->kids[i + 1] = a;
  }
  return tall(P, n);
}

AstNode *ast_index(Parse *P, AstNode *x, NodeList *ix, Token rb) {
  AstNode *n = node(P, AST_INDEX, span_join(x->span, tspan(rb)), ix->n + 1);
  n->kids[0] = x;
  for (uint32_t i = 0; i < ix->n; i++) n->kids[i + 1] = ix->items[i];   /* NULL = empty */
  if (P->dml && ix->n == 1 && ix->items[0]) n->flags |= AST_F_DMLROW;
  return tall(P, n);
}

AstNode *ast_member(Parse *P, AstNode *x, Token name) {
  AstNode *n = node(P, AST_MEMBER, span_join(x->span, tspan(name)), 1);
  n->kids[0] = x;
  n->u.sym = tsym(P, name);
  return tall(P, n);
}

AstNode *ast_return(Parse *P, Token t, AstNode *e, Token rp) {
  AstNode *n = node(P, AST_RETURN, ast_span2(t, rp), e ? 1 : 0);
  if (e) n->kids[0] = e;
  return tall(P, n);
}

static void fill_params(Parse *P, NodeList *l, Param **out, int *count) {
  *count = l ? (int)l->n : 0;
  *out = *count ? arena_alloc(&P->chunk->arena, *count * sizeof(Param)) : NULL;
  for (int i = 0; i < *count; i++) {
    AstNode *d = l->items[i];
    for (int j = 0; j < i; j++)
      if ((*out)[j].name == d->u.sym)
        parse_error_span(P, d->span, "duplicate parameter '%s'", d->u.sym->name);
    (*out)[i].name = d->u.sym;
    (*out)[i].dflt = d->nkids ? d->kids[0] : NULL;
    (*out)[i].type = d->op;
    (*out)[i].span = d->span;
  }
}

AstNode *ast_function(Parse *P, Token t, NodeList *params, NodeList *rets, AstNode *body) {
  AstNode *n = node(P, AST_FUNCTION, span_join(tspan(t), body->span), 0);
  FuncInfo *f = arena_alloc(&P->chunk->arena, sizeof *f);
  fill_params(P, params, &f->params, &f->nparams);
  if (rets) {
    fill_params(P, rets, &f->rets, &f->nrets);
    for (int i = 0; i < f->nrets; i++) {
      if (f->rets[i].dflt) parse_error_span(P, f->rets[i].span, "a result cannot have a default");
      /* a result may share a parameter's name (DML): it is that variable (resolve.c) */
    }
  }
  f->body = body;
  f->chunk = P->chunk;
  f->span = tspan(t);
  n->u.fn = f;
  return tall(P, n);
}

AstNode *ast_binary(Parse *P, int kind, int op, AstNode *l, AstNode *r) {
  AstNode *n = node(P, kind, span_join(l->span, r->span), 2);
  n->op = (uint8_t)op;
  n->kids[0] = l;
  n->kids[1] = r;
  return tall(P, n);
}

AstNode *ast_unary(Parse *P, Token t, int op, AstNode *e) {
  if (op == OP_NONE) return e;                   /* unary plus */
  AstNode *n = node(P, AST_UNARY, span_join(tspan(t), e->span), 1);
  n->op = (uint8_t)op;
  n->kids[0] = e;
  return tall(P, n);
}

AstNode *ast_empty_arg(Parse *P, Token name, Token eq) {
  AstNode *n = ast_named_arg(P, name, ast_bool(P, eq, false));
  n->flags |= AST_F_EMPTY;
  return n;
}

AstNode *ast_named_arg(Parse *P, Token name, AstNode *e) {
  AstNode *n = node(P, AST_ARG, span_join(tspan(name), e->span), 1);
  if (P->chunk->src->text[name.start] == '"' || P->chunk->src->text[name.start] == '\'')
    n->u.sym = sym_intern(P->syms, ttext(P, name) + 1, name.end - name.start - 2);
  else
    n->u.sym = tsym(P, name);
  n->kids[0] = e;
  return tall(P, n);
}

/* DML's types (SystemDS's ml_type): a value type, or a data type with its value type in
** brackets. Each name is written in lower case or with a capital first letter (Matrix[Double]).
** MLS also takes int/bool/scalar alone and matrix/list without brackets. */
static const struct { const char *name; uint8_t type; bool data; } type_names[] = {
  { "matrix", TY_MATRIX, true }, { "list", TY_LIST, true }, { "scalar", TY_DOUBLE, true },
  { "frame", TY_FRAME, true },
  { "double", TY_DOUBLE, false }, { "integer", TY_INT, false }, { "int", TY_INT, false },
  { "boolean", TY_BOOL, false }, { "bool", TY_BOOL, false }, { "string", TY_STRING, false },
  { "unknown", TY_ANY, false }, { NULL, 0, false }
};

/* The entry spelled s[0..len) (lower case, or a capital first letter), or -1. */
static int type_lookup(const char *s, size_t len) {
  for (int i = 0; type_names[i].name; i++) {
    const char *t = type_names[i].name;
    if (strlen(t) != len) continue;
    if ((s[0] == t[0] || s[0] == t[0] - 'a' + 'A') && memcmp(t + 1, s + 1, len - 1) == 0) return i;
  }
  return -1;
}

static uint8_t parse_type(Parse *P, Token type) {
  const char *s = ttext(P, type);
  size_t n = type.end - type.start, len = 0;
  while (len < n && s[len] != '[' && s[len] != ' ' && s[len] != '\t') len++;
  size_t lb = len;                                  /* DML allows Frame [Unknown] */
  while (lb < n && (s[lb] == ' ' || s[lb] == '\t')) lb++;
  Span sp = { type.start, type.start + (uint32_t)len };
  int d = type_lookup(s, len);
  if (d < 0) {
    parse_error_span(P, sp, "unknown type '%.*s'", (int)len, s);
    return TY_ANY;
  }
  if (lb == n) return type_names[d].type;          /* no [value type] */
  if (!type_names[d].data) {
    parse_error_span(P, sp, "'%.*s' is a value type: it takes no [ ] (write matrix[%.*s])", (int)len, s, (int)len, s);
    return TY_ANY;
  }
  size_t a = lb + 1;
  while (a < n && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n' || s[a] == '\r')) a++;
  size_t b = a;
  while (b < n && s[b] != ']' && s[b] != ' ' && s[b] != '\t' && s[b] != '\n' && s[b] != '\r') b++;
  int v = type_lookup(s + a, b - a);
  if (v < 0 || type_names[v].data) {
    Span vs = { type.start + (uint32_t)a, type.start + (uint32_t)b };
    parse_error_span(P, vs, "unknown value type '%.*s' (DML's are double, integer, boolean, string and unknown)",
                     (int)(b - a), s + a);
    return TY_ANY;
  }
  if (type_names[d].type == TY_DOUBLE) return type_names[v].type;   /* scalar[integer] */
  return type_names[d].type;
}

AstNode *ast_param_def(Parse *P, const Token *type, Token name, AstNode *dflt) {
  AstNode *n = node(P, AST_PARAMDEF, tspan(name), dflt ? 1 : 0);
  n->u.sym = tsym(P, name);
  if (dflt) n->kids[0] = dflt;
  if (type) n->op = parse_type(P, *type);
  return tall(P, n);
}

/* ---- names and dumps ---- */
const char *ast_kind_name(int kind) {
  static const char *const names[AST_KIND_COUNT] = {
    "num", "str", "bool", "NULL", "name", "clparam", "nsref", "binary", "unary", "&&", "||",
    "call", "arg", "index", "member", "matrix", "row", "function", "return", "block", "if",
    "while", "for", "break", "next", "=", "massign", "source-as", "param" };
  return kind >= 0 && kind < AST_KIND_COUNT ? names[kind] : "?";
}

typedef struct DumpBuf { char *p; size_t n, cap; } DumpBuf;

static void put(DumpBuf *b, const char *s) {
  size_t k = strlen(s);
  for (size_t i = 0; i < k && b->n + 1 < b->cap; i++) b->p[b->n++] = s[i];
  b->p[b->n] = '\0';
}

static void dump(const AstNode *n, DumpBuf *b) {
  char tmp[64];
  if (!n) { put(b, "_"); return; }
  switch (n->kind) {
  case AST_NUM: snprintf(tmp, sizeof tmp, "%.15g", n->u.num); put(b, tmp); return;
  case AST_BOOL: put(b, n->u.num ? "TRUE" : "FALSE"); return;
  case AST_STR: put(b, "\""); put(b, n->u.str.s); put(b, "\""); return;
  case AST_NAME: put(b, n->u.sym->name); return;
  case AST_CLPARAM: put(b, "$"); put(b, n->u.sym->name); return;
  case AST_NSREF: put(b, n->u.sym->name); put(b, "::"); put(b, n->sym2->name); return;
  case AST_BREAK: put(b, "break"); return;
  case AST_NEXT: put(b, "next"); return;
  default: break;
  }
  put(b, "(");
  if (n->kind == AST_BINARY || n->kind == AST_UNARY) put(b, op_info[n->op].sym);
  else put(b, ast_kind_name(n->kind));
  if (n->kind == AST_MEMBER || n->kind == AST_ARG || n->kind == AST_SOURCE_AS) {
    put(b, " ");
    put(b, n->u.sym->name);
  }
  uint32_t nk = n->kind == AST_SOURCE_AS ? 1 : n->nkids;     /* (its "ns::" name: not written) */
  if (n->kind == AST_FUNCTION) {
    const FuncInfo *f = n->u.fn;
    put(b, " (");
    for (int i = 0; i < f->nparams; i++) { if (i) put(b, " "); put(b, f->params[i].name->name); }
    put(b, ")");
    if (f->rets) {
      put(b, " -> (");
      for (int i = 0; i < f->nrets; i++) { if (i) put(b, " "); put(b, f->rets[i].name->name); }
      put(b, ")");
    }
    put(b, " ");
    dump(f->body, b);
  }
  for (uint32_t i = 0; i < nk; i++) { put(b, " "); dump(n->kids[i], b); }
  put(b, ")");
}

void ast_dump(const AstNode *n, char *buf, size_t cap) {
  DumpBuf b = { buf, 0, cap };
  if (cap) buf[0] = '\0';
  dump(n, &b);
}
