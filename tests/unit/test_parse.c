/*
** test_parse.c — unit tests of the parser driver and grammar (src/parse.c, grammar/parser.y):
** precedence and associativity (LANGUAGE.md §4), newline rules (§2), syntax errors and spans.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ast.h"
#include "diag.h"
#include "parse.h"
#include "sym.h"

/* ---- helpers ---- */

/* Parses text; on success writes the dump of the tree to out and returns true; on failure
** fills *pe and returns false. Everything it allocates is freed before it returns. */
static bool parse_to(const char *text, char *out, size_t cap, ParseError *pe) {
  SymTab syms;
  sym_init(&syms);
  Source *src = source_new("t.mls", text, strlen(text));
  memset(pe, 0, sizeof *pe);
  Chunk *ch = parse_chunk(&syms, NULL, src, pe);
  if (ch) {
    assert_non_null(ch->root);
    ast_dump(ch->root, out, cap);
    chunk_release(ch);
  }
  source_release(src);
  sym_free(&syms);
  return ch != NULL;
}

/* Asserts that text parses and dumps exactly as want. */
static void check(const char *text, const char *want) {
  char buf[4096];
  ParseError pe;
  if (!parse_to(text, buf, sizeof buf, &pe))
    fail_msg("'%s' did not parse: %s (at %u-%u)", text, pe.msg, pe.span.start, pe.span.end);
  if (strcmp(buf, want) != 0) print_error("input: '%s'\n", text);
  assert_string_equal(buf, want);
}

/* Asserts that text is a syntax error with this message, span and at_eof flag. */
static void check_err(const char *text, const char *msg, uint32_t start, uint32_t end, bool at_eof) {
  char buf[4096];
  ParseError pe;
  if (parse_to(text, buf, sizeof buf, &pe)) fail_msg("'%s' parsed as %s, expected an error", text, buf);
  if (strcmp(pe.msg, msg) != 0 || pe.span.start != start || pe.span.end != end || pe.at_eof != at_eof)
    print_error("input: '%s': got '%s' at %u-%u at_eof=%d\n", text, pe.msg, pe.span.start,
                pe.span.end, pe.at_eof);
  assert_string_equal(pe.msg, msg);
  assert_int_equal(pe.span.start, start);
  assert_int_equal(pe.span.end, end);
  assert_int_equal(pe.at_eof, at_eof);
}

/* Asserts that text is incomplete: an error with at_eof set (the REPL would read more). */
static void check_incomplete(const char *text) {
  char buf[4096];
  ParseError pe;
  if (parse_to(text, buf, sizeof buf, &pe)) fail_msg("'%s' parsed as %s, expected an error", text, buf);
  if (!pe.at_eof) print_error("input: '%s': got '%s' with at_eof false\n", text, pe.msg);
  assert_true(pe.at_eof);
}

/* The full diagnostic diag_report prints for the syntax error in text (malloc'd). */
static char *diag_of(const char *name, const char *text) {
  SymTab syms;
  sym_init(&syms);
  Source *src = source_new(name, text, strlen(text));
  ParseError pe;
  memset(&pe, 0, sizeof pe);
  Chunk *ch = parse_chunk(&syms, NULL, src, &pe);
  if (ch) {
    chunk_release(ch);
    source_release(src);
    sym_free(&syms);
    fail_msg("'%s' parsed, expected an error", text);
  }
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  assert_non_null(f);
  diag_report(f, src, pe.span, "error", pe.msg);
  fclose(f);
  source_release(src);
  sym_free(&syms);
  return out;
}

static void check_diag(const char *text, const char *want) {
  char *got = diag_of("t.mls", text);
  if (strcmp(got, want) != 0) print_error("input: '%s'\n", text);
  assert_string_equal(got, want);
  free(got);
}

/* ---- precedence: one test per pair of adjacent levels of LANGUAGE.md §4 ---- */

static void test_prec_assign_oror(void **state) {          /* 1 < 2 */
  check("x = a || b", "(block (= x (|| a b)))");
  check("x <- a || b", "(block (= x (|| a b)))");
}

static void test_prec_oror_andand(void **state) {          /* 2 < 3 */
  check("a || b && c", "(block (|| a (&& b c)))");
  check("a && b || c", "(block (|| (&& a b) c))");
}

static void test_prec_andand_or(void **state) {            /* 3 < 4 */
  check("a && b | c", "(block (&& a (| b c)))");
  check("a | b && c", "(block (&& (| a b) c))");
}

static void test_prec_or_and(void **state) {               /* 4 < 5 */
  check("a | b & c", "(block (| a (& b c)))");
  check("a & b | c", "(block (| (& a b) c))");
}

static void test_prec_and_not(void **state) {              /* 5 < 6 */
  check("!a & b", "(block (& (! a) b))");
  check("a & !b", "(block (& a (! b)))");
  check("!a | b", "(block (| (! a) b))");
}

static void test_prec_not_compare(void **state) {          /* 6 < 7 */
  check("!a == b", "(block (! (== a b)))");
  check("!a < b", "(block (! (< a b)))");
}

static void test_prec_compare_add(void **state) {          /* 7 < 8 */
  check("a == b + c", "(block (== a (+ b c)))");
  check("a + b < c", "(block (< (+ a b) c))");
  check("a - b >= c - d", "(block (>= (- a b) (- c d)))");
}

static void test_prec_add_mul(void **state) {              /* 8 < 9 */
  check("a + b * c", "(block (+ a (* b c)))");
  check("a * b - c", "(block (- (* a b) c))");
  check("a / b + c / d", "(block (+ (/ a b) (/ c d)))");
}

static void test_prec_mul_matmul(void **state) {           /* 9 < 10 */
  check("a * b %*% c", "(block (* a (%*% b c)))");
  check("a %% b / c", "(block (/ (%% a b) c))");
  check("a / b %/% c", "(block (/ a (%/% b c)))");
}

static void test_prec_matmul_range(void **state) {         /* 10 < 11 */
  check("a %*% b : c", "(block (%*% a (: b c)))");
  check("a : b %/% c", "(block (%/% (: a b) c))");
  check("1:10 %% 3", "(block (%% (: 1 10) 3))");
}

static void test_prec_range_uminus(void **state) {         /* 11 < 12 */
  check("-1:2", "(block (: (- 1) 2))");
  check("1:-2", "(block (: 1 (- 2)))");
  check("1:n-1", "(block (- (: 1 n) 1))");   /* and 8 < 11 */
}

static void test_prec_uminus_pow(void **state) {           /* 12 < 13 */
  check("-2^2", "(block (- (^ 2 2)))");
  check("2^-1", "(block (^ 2 (- 1)))");
  check("-a^-b", "(block (- (^ a (- b))))");
  check("2^-1:3", "(block (: (^ 2 (- 1)) 3))");
}

static void test_prec_pow_postfix(void **state) {          /* 13 < 14 */
  check("x^f(2)", "(block (^ x (call f 2)))");
  check("a$b^2", "(block (^ (member b a) 2))");
  check("x[1]^2", "(block (^ (index x 1) 2))");
  check("-x[1]", "(block (- (index x 1)))");
  check("!f(x)", "(block (! (call f x)))");
}

static void test_prec_parens(void **state) {
  check("(a + b) * c", "(block (* (+ a b) c))");
  check("-(2^2)", "(block (- (^ 2 2)))");
  check("(-2)^2", "(block (^ (- 2) 2))");
  check("(1:n) - 1", "(block (- (: 1 n) 1))");
  check("1:(n-1)", "(block (: 1 (- n 1)))");
  /* unary plus is dropped */
  check("+x", "(block x)");
}

/* ---- associativity ---- */

static void test_assoc_left(void **state) {
  check("a || b || c", "(block (|| (|| a b) c))");
  check("a && b && c", "(block (&& (&& a b) c))");
  check("a | b | c", "(block (| (| a b) c))");
  check("a & b & c", "(block (& (& a b) c))");
  check("a - b - c", "(block (- (- a b) c))");
  check("a - b + c", "(block (+ (- a b) c))");
  check("a + b - c", "(block (- (+ a b) c))");
  check("a / b / c", "(block (/ (/ a b) c))");
  check("a / b * c", "(block (* (/ a b) c))");
  check("a * b / c", "(block (/ (* a b) c))");
  check("a %*% b %*% c", "(block (%*% (%*% a b) c))");
  check("a %% b %/% c %*% d", "(block (%*% (%/% (%% a b) c) d))");
  check("a:b:c", "(block (: (: a b) c))");
  check("x[1][2]", "(block (index (index x 1) 2))");
  check("f(1)(2)[3]$z", "(block (member z (index (call (call f 1) 2) 3)))");
  check("a$b$c", "(block (member c (member b a)))");
}

static void test_assoc_right(void **state) {
  check("2^3^2", "(block (^ 2 (^ 3 2)))");
  check("a^b^c^d", "(block (^ a (^ b (^ c d))))");
  check("x = y = 3", "(block (= x (= y 3)))");
  check("a = b <- c", "(block (= a (= b c)))");
  check("- - x", "(block (- (- x)))");
  check("!!x", "(block (! (! x)))");
}

static void test_compare_nonassoc(void **state) {
  check_err("a == b == c", "unexpected '=='", 7, 9, false);
  check_err("a < b < c", "unexpected '<'", 6, 7, false);
  check_err("a <= b != c", "unexpected '!='", 7, 9, false);
  check("(a == b) == c", "(block (== (== a b) c))");
}

/* ---- statements ---- */

static void test_statements(void **state) {
  check("x = 1", "(block (= x 1))");
  check("x[1, 2] = 3", "(block (= (index x 1 2) 3))");
  check("x[1, ] = 3", "(block (= (index x 1 _) 3))");
  check("x[, j] = 3", "(block (= (index x _ j) 3))");
  check("x$a = 1", "(block (= (member a x) 1))");
  check("L$a[1] = 1", "(block (= (index (member a L) 1) 1))");
  check("while (x > 0) x = x - 1", "(block (while (> x 0) (= x (- x 1))))");
  check("for (i in 1:3) print(i)", "(block (for i (: 1 3) (call print i)))");
  check("for (i in 1:3) { next; break }", "(block (for i (: 1 3) (block next break)))");
  check("if (a) b else c", "(block (if a b c))");
  check("if (a) b", "(block (if a b))");
  check("f(a = 1, 2, 'b' = 3)", "(block (call f (arg a 1) 2 (arg b 3)))");
  check("f()", "(block (call f))");
  check("[1, 2; 3, 4]", "(block (matrix (row 1 2) (row 3 4)))");
  check("[]", "(block (matrix))");
  check("x = TRUE & FALSE", "(block (= x (& TRUE FALSE)))");
  check("x = \"a\" + 'b'", "(block (= x (+ \"a\" \"b\")))");
  check("x = 1.5e3 + .5", "(block (= x (+ 1500 0.5)))");
  check("$x + $1", "(block (+ $x $1))");
  check("ns::f(1)", "(block (call ns::f 1))");
  check("source(\"a.mls\") as m", "(block (source-as m (call source \"a.mls\")))");
  check("f = function(x) { return(x) }", "(block (= f (function (x) (block (return x)))))");
  check("g = function() return()", "(block (= g (function () (return))))");
  check("", "(block)");
  check("\n\n", "(block)");
}

/* ---- newline rules (LANGUAGE.md §2) ---- */

static void test_newline_ends_statement(void **state) {
  check("x = 1\ny = 2", "(block (= x 1) (= y 2))");
  check("x = 1\n\n\ny = 2\n", "(block (= x 1) (= y 2))");
  /* a newline before an operator ends the statement (as in R) */
  check("x\n-1", "(block x (- 1))");
  check("x = a\n+ b", "(block (= x a) b)");
}

static void test_newline_after_operator(void **state) {
  check("x = 1 +\n 2", "(block (= x (+ 1 2)))");
  check("x =\n 3", "(block (= x 3))");
  check("x <-\n 3", "(block (= x 3))");
  check("a &&\n\n b", "(block (&& a b))");
  check("a ||\n b", "(block (|| a b))");
  check("a %*%\n b", "(block (%*% a b))");
  check("1:\n3", "(block (: 1 3))");
  check("a ==\n b", "(block (== a b))");
  check("a ^\n b", "(block (^ a b))");
  check("!\nb", "(block (! b))");
  check("L$\nname", "(block (member name L))");
  check("x = 1 + # comment\n 2", "(block (= x (+ 1 2)))");
}

static void test_newline_inside_brackets(void **state) {
  check("f(1,\n 2)", "(block (call f 1 2))");
  check("f(\n1\n,\n2\n)", "(block (call f 1 2))");
  check("(1\n+ 2)", "(block (+ 1 2))");
  check("x[1\n, 2]", "(block (index x 1 2))");
  check("[1, 2\n, 3]", "(block (matrix (row 1 2 3)))");
  check("[1, 2;\n 3, 4]", "(block (matrix (row 1 2) (row 3 4)))");
  /* inside { } newlines separate statements again, even within ( ) */
  check("f({\n a\n b\n})", "(block (call f (block a b)))");
  check("{\n a\n b\n}", "(block (block a b))");
}

static void test_newline_if_else(void **state) {
  check("if (x)\n 1\nelse\n 2", "(block (if x 1 2))");
  check("if (x) {\n 1\n}\nelse {\n 2\n}", "(block (if x (block 1) (block 2)))");
  check("if (x) {a}\n\n\nelse {b}", "(block (if x (block a) (block b)))");
  check("if (x) a\nelse if (y) b\nelse c", "(block (if x a (if y b c)))");
  check("if (x)\n\n y = 1", "(block (if x (= y 1)))");
  check("while (x)\n x = x - 1", "(block (while x (= x (- x 1))))");
  check("for (i in 1:3)\n print(i)", "(block (for i (: 1 3) (call print i)))");
  check("f = function(x)\n x + 1", "(block (= f (function (x) (+ x 1))))");
  check("f = function(x)\n return(x + 1)", "(block (= f (function (x) (return (+ x 1)))))");
  /* without an else the newline ends the if */
  check("if (x) a\nb", "(block (if x a) b)");
}

static void test_semicolons(void **state) {
  check("x = 1; y = 2", "(block (= x 1) (= y 2))");
  check("x = 1; y = 2;", "(block (= x 1) (= y 2))");
  check(";;x = 1;;", "(block (= x 1))");
  check("x = 1;\ny = 2", "(block (= x 1) (= y 2))");
  check("if (x) a; else b", "(block (if x a b))");
  check("if (x) a;\nelse b", "(block (if x a b))");
  check("{ a; b; }", "(block (block a b))");
  check(";", "(block)");
}

static void test_dml_function_header(void **state) {
  check("f = function(matrix[double] X, double e = 1e-6)\n return (matrix[double] Y, double n) {\n"
        "  Y = X / (sum(X) + e); n = nrow(X)\n}",
        "(block (= f (function (X e) -> (Y n) (block (= Y (/ X (+ (call sum X) e))) "
        "(= n (call nrow X))))))");
  check("f = function(x) return (double y) {y = x}",
        "(block (= f (function (x) -> (y) (block (= y x)))))");
  check("f = function(x)\n return (double y)\n{\n y = x\n}",
        "(block (= f (function (x) -> (y) (block (= y x)))))");
}

/* ---- function parameters ---- */

static void test_function_params(void **state) {
  const char *text = "f = function(x, y = 2, matrix[double] Z, int n = 3 + 1) x";
  SymTab syms;
  sym_init(&syms);
  Source *src = source_new("t.mls", text, strlen(text));
  ParseError pe;
  Chunk *ch = parse_chunk(&syms, NULL, src, &pe);
  assert_non_null(ch);
  AstNode *as = ch->root->kids[0];
  assert_int_equal(as->kind, AST_ASSIGN);
  AstNode *fn = as->kids[1];
  assert_int_equal(fn->kind, AST_FUNCTION);
  const FuncInfo *fi = fn->u.fn;
  assert_int_equal(fi->nparams, 4);
  assert_null(fi->rets);
  assert_string_equal(fi->params[0].name->name, "x");
  assert_null(fi->params[0].dflt);
  assert_int_equal(fi->params[0].type, TY_ANY);
  assert_string_equal(fi->params[1].name->name, "y");
  assert_non_null(fi->params[1].dflt);
  assert_int_equal(fi->params[1].dflt->kind, AST_NUM);
  assert_true(fi->params[1].dflt->u.num == 2.0);
  assert_int_equal(fi->params[1].type, TY_ANY);
  assert_string_equal(fi->params[2].name->name, "Z");
  assert_int_equal(fi->params[2].type, TY_MATRIX);
  assert_null(fi->params[2].dflt);
  assert_string_equal(fi->params[3].name->name, "n");
  assert_int_equal(fi->params[3].type, TY_INT);
  char buf[256];
  ast_dump(fi->params[3].dflt, buf, sizeof buf);
  assert_string_equal(buf, "(+ 3 1)");
  /* the function takes the name it is assigned to (for stack traces) */
  assert_non_null(fi->name);
  assert_string_equal(fi->name->name, "f");
  /* the parameter span is the name */
  assert_int_equal(fi->params[1].span.start, 16);
  assert_int_equal(fi->params[1].span.end, 17);
  chunk_release(ch);
  source_release(src);
  sym_free(&syms);
}

static void test_dml_result_types(void **state) {
  const char *text = "g = function(string s, boolean b = TRUE, list L, double d)\n"
                     "  return (matrix[double] M, integer k) { M = 1; k = 2 }";
  SymTab syms;
  sym_init(&syms);
  Source *src = source_new("t.mls", text, strlen(text));
  ParseError pe;
  Chunk *ch = parse_chunk(&syms, NULL, src, &pe);
  assert_non_null(ch);
  const FuncInfo *fi = ch->root->kids[0]->kids[1]->u.fn;
  assert_int_equal(fi->nparams, 4);
  assert_int_equal(fi->params[0].type, TY_STRING);
  assert_int_equal(fi->params[1].type, TY_BOOL);
  assert_int_equal(fi->params[1].dflt->kind, AST_BOOL);
  assert_int_equal(fi->params[2].type, TY_LIST);
  assert_int_equal(fi->params[3].type, TY_DOUBLE);
  assert_int_equal(fi->nrets, 2);
  assert_string_equal(fi->rets[0].name->name, "M");
  assert_int_equal(fi->rets[0].type, TY_MATRIX);
  assert_string_equal(fi->rets[1].name->name, "k");
  assert_int_equal(fi->rets[1].type, TY_INT);
  chunk_release(ch);
  source_release(src);
  sym_free(&syms);
}

static void test_param_errors(void **state) {
  check_err("function(badtype x) x", "unknown type 'badtype'", 9, 16, false);
  check_err("function(x, x) 1", "duplicate parameter 'x'", 12, 13, false);
  check_err("function(x) return (double y, double y) { y = 1 }", "duplicate parameter 'y'",
            37, 38, false);
  check_err("function(x) return (double y = 1) { y = 1 }", "a result cannot have a default",
            27, 28, false);
}

/* ---- multi-assignment and assignment targets ---- */

static void test_multi_assign(void **state) {
  check("[a, b] = f(x)", "(block (massign a b (call f x)))");
  check("[a, b] <- f(x)", "(block (massign a b (call f x)))");
  check("[Q, R, S] = svd(A)", "(block (massign Q R S (call svd A)))");
  check("[a] = f(x)", "(block (massign a (call f x)))");
  check("[a, b] = f(x) + 1", "(block (massign a b (+ (call f x) 1)))");
  /* a matrix literal that is not assigned is just a matrix */
  check("[a, b]", "(block (matrix (row a b)))");
  check("x = [a, b]", "(block (= x (matrix (row a b))))");
  check_err("[a, 1] = f(x)", "invalid target in multiple assignment (a name expected)", 4, 5, false);
  check_err("[a, b[1]] = f(x)", "invalid target in multiple assignment (a name expected)", 4, 8, false);
}

static void test_invalid_targets(void **state) {
  check_err("1 = x", "invalid assignment target", 0, 1, false);
  check_err("f(x) = 2", "invalid assignment target", 0, 4, false);
  check_err("f(x) <- 2", "invalid assignment target", 0, 4, false);
  check_err("x + 1 = 2", "invalid assignment target", 0, 5, false);
  check_err("(x) = 2", "invalid assignment target", 0, 3, false);
  check_err("TRUE = 1", "invalid assignment target", 0, 4, false);
  check_err("\"s\" = 1", "invalid assignment target", 0, 3, false);
  check_err("x$y(1) = 2", "invalid assignment target", 0, 6, false);
  check_err("y = 1 = x", "invalid assignment target", 4, 5, false);
}

/* ---- syntax errors ---- */

static void test_syntax_errors(void **state) {
  check_err("y = (x + )", "unexpected ')'", 9, 10, false);
  check_err("1 +* 2", "unexpected '*'", 3, 4, false);
  check_err("x = )", "unexpected ')'", 4, 5, false);
  check_err("1 2", "unexpected '2'", 2, 3, false);
  check_err("x y", "unexpected 'y'", 2, 3, false);
  check_err("x = 1\ny = 2 3\n", "unexpected '3'", 12, 13, false);
  check_err("return x", "unexpected 'x'", 7, 8, false);
  check_err("x[1,2,3]", "unexpected ','", 5, 6, false);
  check_err("f(1 2)", "unexpected '2'", 4, 5, false);
  check_err("x = \"a\" \"b\"", "unexpected string \"b\"", 8, 11, false);
  check_err("else x", "unexpected 'else'", 0, 4, false);
  check_err("x = }", "unexpected '}'", 4, 5, false);
  check_err("f(x))", "unexpected ')'", 4, 5, false);
  check_err("for (i 1:3) x", "unexpected '1'", 7, 8, false);
  check_err("x = @", "unexpected character '@'", 4, 5, false);
  check_err("x = \"abc", "unterminated string", 4, 5, false);
  check_err("x = \"a\\qb\"", "invalid escape sequence in string", 6, 8, false);
  check_err("/* abc", "unterminated comment", 0, 2, false);
  check_err("x = caf\xc3\xa9", "unexpected non-ASCII byte (only strings and comments may hold UTF-8)",
            7, 8, false);
}

static void test_deep_nesting_is_an_error(void **state) {
  enum { N = 30000 };
  char *text = malloc(2 * N + 2);
  assert_non_null(text);
  memset(text, '(', N);
  text[N] = '1';
  memset(text + N + 1, ')', N);
  text[2 * N + 1] = '\0';
  char buf[64];
  ParseError pe;
  assert_false(parse_to(text, buf, sizeof buf, &pe));
  assert_string_equal(pe.msg, "expression nested too deeply");
  assert_false(pe.at_eof);
  memset(text, '-', N);
  text[N] = '1';
  text[N + 1] = '\0';
  assert_false(parse_to(text, buf, sizeof buf, &pe));
  assert_string_equal(pe.msg, "expression nested too deeply");
  free(text);
}

/* ---- at_eof: incomplete input (the REPL reads another line) vs a real error ---- */

static void test_at_eof_incomplete(void **state) {
  check_err("x +", "unexpected end of input", 3, 3, true);
  check_err("x = ", "unexpected end of input", 3, 3, true);
  check_err("if (x) 1 else", "unexpected end of input", 13, 13, true);
  check_incomplete("{");
  check_incomplete("f(1,");
  check_incomplete("[1,");
  check_incomplete("f = function(x) {\n  x +");
  check_incomplete("while (TRUE) {\n  x = 1\n");
}

static void test_unclosed_bracket_message(void **state) {
  /* the message names the bracket that is still open, quoted once */
  check_err("{", "unexpected end of input ('{' at line 1 is not closed)", 1, 1, true);
  check_err("f(1,", "unexpected end of input ('(' at line 1 is not closed)", 4, 4, true);
  check_err("[1,", "unexpected end of input ('[' at line 1 is not closed)", 3, 3, true);
  check_err("f = function(x) {\n  x +", "unexpected end of input ('{' at line 1 is not closed)",
            23, 23, true);
}

static void test_at_eof_incomplete_header(void **state) {
  /* the body of if/while/for/function may start on the next line, so it is incomplete */
  check_incomplete("if (x)");
  check_incomplete("if (x)\n");
  check_incomplete("while (x)");
  check_incomplete("for (i in 1:2)");
  check_incomplete("f = function(x)");
}

static void test_at_eof_open_bracket(void **state) {
  check_incomplete("(");
  check_incomplete("if (");
  check_incomplete("x = [1, 2");
  check_incomplete("f(1");
}

static void test_at_eof_false_for_errors(void **state) {
  check_err("y = (x + )", "unexpected ')'", 9, 10, false);
  check_err("x = 1 +* 2", "unexpected '*'", 7, 8, false);
  check_err("f(x) = 2", "invalid assignment target", 0, 4, false);
  check_err("}", "unexpected '}'", 0, 1, false);
}

/* ---- the exact diagnostic with the caret line ---- */

static void test_diag_caret(void **state) {
  check_diag("y = (x + )",
             "t.mls:1:10: error: unexpected ')'\n"
             "y = (x + )\n"
             "         ^\n");
  check_diag("f(x) = 2",
             "t.mls:1:1: error: invalid assignment target\n"
             "f(x) = 2\n"
             "^~~~\n");
  check_diag("x = 1\ny = 2 3\nz = 4\n",
             "t.mls:2:7: error: unexpected '3'\n"
             "y = 2 3\n"
             "      ^\n");
  check_diag("x = \"a\\qb\"",
             "t.mls:1:7: error: invalid escape sequence in string\n"
             "x = \"a\\qb\"\n"
             "      ^~\n");
  check_diag("ok = 1\n  w = a == b == c",
             "t.mls:2:14: error: unexpected '=='\n"
             "  w = a == b == c\n"
             "             ^~\n");
  /* a tab before the error is kept so the caret lines up */
  check_diag("\tx = )",
             "t.mls:1:6: error: unexpected ')'\n"
             "\tx = )\n"
             "\t    ^\n");
  /* an error at the end of input points just past the last token */
  check_diag("x = 1 +",
             "t.mls:1:8: error: unexpected end of input\n"
             "x = 1 +\n"
             "       ^\n");
  /* a CRLF line is shown without its \r */
  check_diag("x = 1\r\ny = @\r\n",
             "t.mls:2:5: error: unexpected character '@'\n"
             "y = @\n"
             "    ^\n");
}

static void test_diag_multiline_span(void **state) {
  /* a span that runs past the line: the tildes stop at the end of the line */
  Source *src = source_new("m.mls", "abc def\nghi\n", 12);
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  Span sp = { 4, 10 };
  diag_report(f, src, sp, "error", "boom");
  fclose(f);
  assert_string_equal(out, "m.mls:1:5: error: boom\nabc def\n    ^~~\n");
  free(out);
  /* no source: just the message */
  out = NULL;
  f = open_memstream(&out, &n);
  diag_report(f, NULL, sp, "warning", "w");
  fclose(f);
  assert_string_equal(out, "mls: warning: w\n");
  free(out);
  /* line/column lookup */
  uint32_t line, col;
  diag_locate(src, 0, &line, &col);
  assert_int_equal(line, 1);
  assert_int_equal(col, 1);
  diag_locate(src, 9, &line, &col);
  assert_int_equal(line, 2);
  assert_int_equal(col, 2);
  char where[64];
  diag_where(where, sizeof where, src, 8);
  assert_string_equal(where, "m.mls:2:1");
  source_release(src);
}

static void test_spans_of_nodes(void **state) {
  const char *text = "x = foo(1, 2) + y[3]";
  SymTab syms;
  sym_init(&syms);
  Source *src = source_new("t.mls", text, strlen(text));
  ParseError pe;
  Chunk *ch = parse_chunk(&syms, NULL, src, &pe);
  assert_non_null(ch);
  AstNode *as = ch->root->kids[0];
  assert_int_equal(as->span.start, 0);
  assert_int_equal(as->span.end, 20);
  AstNode *plus = as->kids[1];
  assert_int_equal(plus->span.start, 4);
  assert_int_equal(plus->span.end, 20);
  AstNode *call = plus->kids[0];
  assert_int_equal(call->kind, AST_CALL);
  assert_int_equal(call->span.start, 4);
  assert_int_equal(call->span.end, 13);
  AstNode *ix = plus->kids[1];
  assert_int_equal(ix->kind, AST_INDEX);
  assert_int_equal(ix->span.start, 16);
  assert_int_equal(ix->span.end, 20);
  chunk_release(ch);
  source_release(src);
  sym_free(&syms);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_prec_assign_oror),
    cmocka_unit_test(test_prec_oror_andand),
    cmocka_unit_test(test_prec_andand_or),
    cmocka_unit_test(test_prec_or_and),
    cmocka_unit_test(test_prec_and_not),
    cmocka_unit_test(test_prec_not_compare),
    cmocka_unit_test(test_prec_compare_add),
    cmocka_unit_test(test_prec_add_mul),
    cmocka_unit_test(test_prec_mul_matmul),
    cmocka_unit_test(test_prec_matmul_range),
    cmocka_unit_test(test_prec_range_uminus),
    cmocka_unit_test(test_prec_uminus_pow),
    cmocka_unit_test(test_prec_pow_postfix),
    cmocka_unit_test(test_prec_parens),
    cmocka_unit_test(test_assoc_left),
    cmocka_unit_test(test_assoc_right),
    cmocka_unit_test(test_compare_nonassoc),
    cmocka_unit_test(test_statements),
    cmocka_unit_test(test_newline_ends_statement),
    cmocka_unit_test(test_newline_after_operator),
    cmocka_unit_test(test_newline_inside_brackets),
    cmocka_unit_test(test_newline_if_else),
    cmocka_unit_test(test_semicolons),
    cmocka_unit_test(test_dml_function_header),
    cmocka_unit_test(test_function_params),
    cmocka_unit_test(test_dml_result_types),
    cmocka_unit_test(test_param_errors),
    cmocka_unit_test(test_multi_assign),
    cmocka_unit_test(test_invalid_targets),
    cmocka_unit_test(test_syntax_errors),
    cmocka_unit_test(test_deep_nesting_is_an_error),
    cmocka_unit_test(test_at_eof_incomplete),
    cmocka_unit_test(test_unclosed_bracket_message),
    cmocka_unit_test(test_at_eof_incomplete_header),
    cmocka_unit_test(test_at_eof_open_bracket),
    cmocka_unit_test(test_at_eof_false_for_errors),
    cmocka_unit_test(test_diag_caret),
    cmocka_unit_test(test_diag_multiline_span),
    cmocka_unit_test(test_spans_of_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
