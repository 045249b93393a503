/*
** test_lex.c — unit tests of the re2c lexer (grammar/lexer.re, LANGUAGE.md §2): every token
** kind, number and name forms, strings, comments, illegal input and token spans.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include "lex.h"
#include "parser.h"

#define MAXTOK 64

/* The tokens of text[0..len) up to and including TK_EOF or the first TK_ILLEGAL. */
typedef struct Lexed {
  Token t[MAXTOK];
  int n;
  const char *err;       /* lx.err after the last token */
} Lexed;

static void lex_n(Lexed *out, const char *text, uint32_t len) {
  Lexer lx;
  lex_init(&lx, text, len);
  out->n = 0;
  out->err = NULL;
  for (;;) {
    assert_true(out->n < MAXTOK);
    Token *t = &out->t[out->n++];
    lex_next(&lx, t);
    if (t->kind == TK_EOF || t->kind == TK_ILLEGAL) break;
  }
  out->err = lx.err;
}

static void lex_str(Lexed *out, const char *text) { lex_n(out, text, (uint32_t)strlen(text)); }

/* Asserts that text lexes to exactly the kinds given (terminated by TK_EOF, which is checked). */
static void expect_kinds(const char *text, ...) {
  Lexed L;
  lex_str(&L, text);
  va_list ap;
  va_start(ap, text);
  int i = 0;
  for (;; i++) {
    int k = va_arg(ap, int);
    assert_true(i < L.n);
    if (L.t[i].kind != k)
      print_error("input '%s': token %d is %s (%d), expected %s (%d)\n", text, i,
                  lex_token_name(L.t[i].kind), L.t[i].kind, lex_token_name(k), k);
    assert_int_equal(L.t[i].kind, k);
    if (k == TK_EOF) break;
  }
  va_end(ap);
  assert_int_equal(L.n, i + 1);
}

/* Asserts that text is exactly one token of kind k covering the whole input. */
static void expect_one(const char *text, int k) {
  Lexed L;
  lex_str(&L, text);
  assert_int_equal(L.n, 2);
  if (L.t[0].kind != k)
    print_error("input '%s': got %s, expected %s\n", text, lex_token_name(L.t[0].kind), lex_token_name(k));
  assert_int_equal(L.t[0].kind, k);
  assert_int_equal(L.t[0].start, 0);
  assert_int_equal(L.t[0].end, strlen(text));
  assert_int_equal(L.t[1].kind, TK_EOF);
}

static void test_operators(void **state) {
  static const struct { const char *s; int k; } ops[] = {
    { "+", TK_PLUS }, { "-", TK_MINUS }, { "*", TK_STAR }, { "/", TK_SLASH }, { "^", TK_CARET },
    { "%*%", TK_MATMUL }, { "%%", TK_MOD }, { "%/%", TK_INTDIV }, { ":", TK_COLON },
    { "::", TK_COLONCOLON }, { "==", TK_EQ }, { "!=", TK_NE }, { "<", TK_LT }, { "<=", TK_LE },
    { ">", TK_GT }, { ">=", TK_GE }, { "<-", TK_LARROW }, { "!", TK_NOT }, { "&&", TK_ANDAND },
    { "||", TK_OROR }, { "&", TK_AND }, { "|", TK_OR }, { "=", TK_ASSIGN }, { "(", TK_LP },
    { ")", TK_RP }, { "[", TK_LB }, { "]", TK_RB }, { "{", TK_LBRACE }, { "}", TK_RBRACE },
    { ",", TK_COMMA }, { ";", TK_SEMI }, { "$", TK_DOLLAR },
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) expect_one(ops[i].s, ops[i].k);
}

static void test_operators_adjacent(void **state) {
  /* longest match: "<-" is one token, "< -" two; "a<-1" assigns as in R */
  expect_kinds("a<-1", TK_NAME, TK_LARROW, TK_NUM, TK_EOF);
  expect_kinds("a< -1", TK_NAME, TK_LT, TK_MINUS, TK_NUM, TK_EOF);
  expect_kinds("a<=b>=c==d!=e", TK_NAME, TK_LE, TK_NAME, TK_GE, TK_NAME, TK_EQ, TK_NAME, TK_NE,
               TK_NAME, TK_EOF);
  expect_kinds("!!x", TK_NOT, TK_NOT, TK_NAME, TK_EOF);
  expect_kinds("a&&&b", TK_NAME, TK_ANDAND, TK_AND, TK_NAME, TK_EOF);
  expect_kinds("a|||b", TK_NAME, TK_OROR, TK_OR, TK_NAME, TK_EOF);
  expect_kinds(":::", TK_COLONCOLON, TK_COLON, TK_EOF);
  expect_kinds("A%*%B%%C%/%D", TK_NAME, TK_MATMUL, TK_NAME, TK_MOD, TK_NAME, TK_INTDIV, TK_NAME,
               TK_EOF);
  expect_kinds("x[1,]$y", TK_NAME, TK_LB, TK_NUM, TK_COMMA, TK_RB, TK_DOLLAR, TK_NAME, TK_EOF);
  expect_kinds("2^-1", TK_NUM, TK_CARET, TK_MINUS, TK_NUM, TK_EOF);
}

static void test_keywords(void **state) {
  static const struct { const char *s; int k; } kw[] = {
    { "if", TK_IF }, { "else", TK_ELSE }, { "while", TK_WHILE }, { "for", TK_FOR },
    { "in", TK_IN }, { "function", TK_FUNCTION }, { "return", TK_RETURN }, { "break", TK_BREAK },
    { "next", TK_NEXT }, { "TRUE", TK_TRUE }, { "FALSE", TK_FALSE }, { "Inf", TK_INF },
    { "NaN", TK_NAN }, { "NULL", TK_NULL }, { "NA", TK_NA }, { "repeat", TK_REPEAT }, { "parfor", TK_PARFOR },
  };
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) expect_one(kw[i].s, kw[i].k);
}

static void test_keyword_prefixes_are_names(void **state) {
  static const char *const names[] = {
    "iffy", "format", "inner", "in_", "in.x", "if.x", "elsewhere", "whilst", "for1", "functions",
    "returns", "breaks", "next_", "nextElem", "TRUEx", "FALSE.", "Info", "NaNs", "True", "true",
    "NULLs", "Null", "repeats", "repeat_", "NAs", "NA_", "as", "IF", "Else",
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) expect_one(names[i], TK_NAME);
  /* a keyword followed by a non-name character stays a keyword */
  expect_kinds("if(x)", TK_IF, TK_LP, TK_NAME, TK_RP, TK_EOF);
  expect_kinds("for(i in x)", TK_FOR, TK_LP, TK_NAME, TK_IN, TK_NAME, TK_RP, TK_EOF);
  expect_kinds("-Inf", TK_MINUS, TK_INF, TK_EOF);
}

static void test_names(void **state) {
  static const char *const names[] = {
    "x", "X1", "x_1", "_x", "__", "as.scalar", "rowSums", "a.b.c", ".x", ".", "..", "...", "._",
    ".a1", "x.1", "x..", "a_b.c_d9",
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) expect_one(names[i], TK_NAME);
  /* a name cannot start with a digit: 1x is a number then a name */
  expect_kinds("1x", TK_NUM, TK_NAME, TK_EOF);
}

static void test_numbers(void **state) {
  static const char *const nums[] = {
    "1", "0", "42", "1.5", ".5", "1e-3", "10E-9", "1.5e+3", "1.", "1e5", "1E5", "0.000",
    ".5e2", "1.e3", "007", "123456789012345678901234567890", "3L", "1e3L", "0L",
  };
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) expect_one(nums[i], TK_NUM);
}

static void test_number_edges(void **state) {
  /* "." then a digit is a number, not a name */
  expect_kinds(".5", TK_NUM, TK_EOF);
  expect_kinds(".5x", TK_NUM, TK_NAME, TK_EOF);
  expect_kinds("1.5L", TK_NUM, TK_NAME, TK_EOF);      /* R's L only after a whole number */
  expect_kinds("3Lx", TK_NUM, TK_NAME, TK_EOF);
  expect_kinds("x.5", TK_NAME, TK_EOF);
  /* an exponent needs digits: "1e" is 1 then the name e; "1e+" is 1, e, + */
  expect_kinds("1e", TK_NUM, TK_NAME, TK_EOF);
  expect_kinds("1e+", TK_NUM, TK_NAME, TK_PLUS, TK_EOF);
  /* a second dot starts a new token */
  expect_kinds("1.2.3", TK_NUM, TK_NUM, TK_EOF);
  /* a range, not a decimal point */
  expect_kinds("1:10", TK_NUM, TK_COLON, TK_NUM, TK_EOF);
  /* the sign is an operator */
  expect_kinds("-1.5e-3", TK_MINUS, TK_NUM, TK_EOF);

  Lexed L;
  lex_str(&L, "1.5e+3+2");
  assert_int_equal(L.t[0].kind, TK_NUM);
  assert_int_equal(L.t[0].end, 6);
  assert_int_equal(L.t[1].kind, TK_PLUS);
  assert_int_equal(L.t[2].kind, TK_NUM);
  assert_int_equal(L.t[2].start, 7);
}

static void test_strings(void **state) {
  static const char *const strs[] = {
    "\"\"", "''", "\"abc\"", "'abc'", "\"it's\"", "'say \"hi\"'",
    "\"a\\nb\\tc\\rd\"", "'a\\nb\\tc\\rd'", "\"q\\\"q\"", "'q\\'q'", "\"\\\\\"", "'\\\\'",
    "\"\\'\"", "'\\\"'", "\"#not a comment\"", "'/* nor this */'", "\"caf\xc3\xa9\"",
    "'\xe2\x88\x91'", "\"multi\nline\"",
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) expect_one(strs[i], TK_STR);
  expect_kinds("\"a\" + 'b'", TK_STR, TK_PLUS, TK_STR, TK_EOF);
  /* an escaped backslash ends the escape: "\\" then x */
  expect_kinds("\"\\\\\"x", TK_STR, TK_NAME, TK_EOF);
}

static void test_string_errors(void **state) {
  Lexed L;
  lex_str(&L, "x = \"abc");
  assert_int_equal(L.t[2].kind, TK_ILLEGAL);
  assert_int_equal(L.t[2].start, 4);
  assert_string_equal(L.err, "unterminated string");

  lex_str(&L, "'abc\"");
  assert_int_equal(L.t[0].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "unterminated string");

  /* an escaped quote does not end the string */
  lex_str(&L, "\"ab\\\"");
  assert_int_equal(L.t[0].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "unterminated string");

  /* an unknown escape: the span covers the two bytes of the escape */
  lex_str(&L, "s = \"ab\\qc\"");
  assert_int_equal(L.n, 3);
  assert_int_equal(L.t[2].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "invalid escape sequence in string");
  assert_int_equal(L.t[2].start, 7);
  assert_int_equal(L.t[2].end, 9);

  lex_str(&L, "'\\x41'");
  assert_int_equal(L.t[0].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "invalid escape sequence in string");
}

static void test_newlines(void **state) {
  expect_kinds("\n", TK_NEWLINE, TK_EOF);
  expect_kinds("a\nb\n\nc", TK_NAME, TK_NEWLINE, TK_NAME, TK_NEWLINE, TK_NEWLINE, TK_NAME, TK_EOF);
  /* other white space (\r of CRLF included) is skipped */
  expect_kinds(" \t\r\f\va \t\r\n b", TK_NAME, TK_NEWLINE, TK_NAME, TK_EOF);
  expect_kinds("x;y", TK_NAME, TK_SEMI, TK_NAME, TK_EOF);
  expect_kinds("", TK_EOF);
  expect_kinds("   \t ", TK_EOF);
}

static void test_line_comments(void **state) {
  expect_kinds("x # comment\ny", TK_NAME, TK_NEWLINE, TK_NAME, TK_EOF);
  /* a comment at the end of input without a newline */
  expect_kinds("x # comment", TK_NAME, TK_EOF);
  expect_kinds("#", TK_EOF);
  expect_kinds("# only a comment\n", TK_NEWLINE, TK_EOF);
  /* the comment ends at the newline, which is still a token */
  expect_kinds("a#b\nc", TK_NAME, TK_NEWLINE, TK_NAME, TK_EOF);
  /* a block-comment opener inside a line comment is plain text */
  expect_kinds("# /* not a block\nx", TK_NEWLINE, TK_NAME, TK_EOF);
}

static void test_block_comments(void **state) {
  expect_kinds("/* c */x", TK_NAME, TK_EOF);
  expect_kinds("a/**/b", TK_NAME, TK_NAME, TK_EOF);
  expect_kinds("/***/", TK_EOF);
  expect_kinds("/* a * b ** c / d */ x", TK_NAME, TK_EOF);
  expect_kinds("/* ends with stars **/ x", TK_NAME, TK_EOF);
  /* a block comment holds newlines and is not one itself */
  expect_kinds("a /* 1\n2\n */ b", TK_NAME, TK_NAME, TK_EOF);
  /* it does not nest: the first star-slash ends it */
  expect_kinds("/* /* */ x */", TK_NAME, TK_STAR, TK_SLASH, TK_EOF);
  /* a block comment at EOF */
  expect_kinds("x /* tail */", TK_NAME, TK_EOF);
  /* UTF-8 in comments is fine */
  expect_kinds("x # caf\xc3\xa9\n/* \xe2\x88\x91 */y", TK_NAME, TK_NEWLINE, TK_NAME, TK_EOF);
}

static void test_unterminated_block_comment(void **state) {
  Lexed L;
  lex_str(&L, "x = 1 /* never closed\n y = 2");
  assert_int_equal(L.n, 4);
  assert_int_equal(L.t[3].kind, TK_ILLEGAL);
  assert_int_equal(L.t[3].start, 6);
  assert_int_equal(L.t[3].end, 8);
  assert_string_equal(L.err, "unterminated comment");

  lex_str(&L, "/*");
  assert_int_equal(L.t[0].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "unterminated comment");

  lex_str(&L, "/* almost *");
  assert_int_equal(L.t[0].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "unterminated comment");
}

static void test_illegal_characters(void **state) {
  static const char *const bad[] = { "@", "\x01", "`", "?", "~", "\\", "\x7f" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Lexed L;
    lex_str(&L, bad[i]);
    assert_int_equal(L.t[0].kind, TK_ILLEGAL);
    assert_int_equal(L.t[0].start, 0);
    assert_int_equal(L.t[0].end, 1);
    assert_string_equal(L.err, "unexpected character");
  }
  Lexed L;
  lex_str(&L, "x = y @ z");
  assert_int_equal(L.n, 4);
  assert_int_equal(L.t[3].kind, TK_ILLEGAL);
  assert_int_equal(L.t[3].start, 6);
  assert_int_equal(L.t[3].end, 7);

  /* a lone % and an unknown %op% */
  lex_str(&L, "a % b");
  assert_int_equal(L.t[1].kind, TK_ILLEGAL);
  lex_str(&L, "a %o% b");
  assert_int_equal(L.t[1].kind, TK_ILLEGAL);
  assert_int_equal(L.t[1].start, 2);
  assert_int_equal(L.t[1].end, 5);
  assert_string_equal(L.err, "unknown operator");
}

static void test_non_ascii_outside_string(void **state) {
  Lexed L;
  lex_str(&L, "x = caf\xc3\xa9");
  assert_int_equal(L.n, 4);
  assert_int_equal(L.t[2].kind, TK_NAME);
  assert_int_equal(L.t[2].end, 7);
  assert_int_equal(L.t[3].kind, TK_ILLEGAL);
  assert_int_equal(L.t[3].start, 7);
  assert_int_equal(L.t[3].end, 8);
  assert_string_equal(L.err, "unexpected non-ASCII byte (only strings and comments may hold UTF-8)");

  lex_str(&L, "\xff");
  assert_int_equal(L.t[0].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "unexpected non-ASCII byte (only strings and comments may hold UTF-8)");
}

static void test_nul_in_input(void **state) {
  static const char text[] = "ab\0cd";      /* 5 bytes, then the terminating NUL */
  Lexed L;
  lex_n(&L, text, 5);
  assert_int_equal(L.n, 2);
  assert_int_equal(L.t[0].kind, TK_NAME);
  assert_int_equal(L.t[0].end, 2);
  assert_int_equal(L.t[1].kind, TK_ILLEGAL);
  assert_int_equal(L.t[1].start, 2);
  assert_int_equal(L.t[1].end, 3);
  assert_string_equal(L.err, "unexpected NUL byte");

  /* a NUL inside a string or a comment is an error too, never the end of input */
  static const char s2[] = "\"a\0b\"";
  lex_n(&L, s2, 5);
  assert_int_equal(L.t[L.n - 1].kind, TK_ILLEGAL);
  static const char s3[] = "# a\0b\nx";
  lex_n(&L, s3, 7);
  assert_int_equal(L.t[L.n - 1].kind, TK_ILLEGAL);
  assert_string_equal(L.err, "unexpected NUL byte");

  /* the terminating NUL is the end */
  lex_n(&L, "ab", 2);
  assert_int_equal(L.t[1].kind, TK_EOF);
  assert_int_equal(L.t[1].start, 2);
  assert_int_equal(L.t[1].end, 2);
}

static void test_eof_is_sticky(void **state) {
  Lexer lx;
  Token t;
  lex_init(&lx, "x", 1);
  lex_next(&lx, &t);
  assert_int_equal(t.kind, TK_NAME);
  for (int i = 0; i < 3; i++) {
    lex_next(&lx, &t);
    assert_int_equal(t.kind, TK_EOF);
    assert_int_equal(t.start, 1);
  }
  assert_null(lx.err);
}

static void test_spans(void **state) {
  const char *src = "ab  <- 12.5e1 # c\n  'x y'/*z*/%*%foo";
  static const struct { int k; uint32_t s, e; } want[] = {
    { TK_NAME, 0, 2 }, { TK_LARROW, 4, 6 }, { TK_NUM, 7, 13 }, { TK_NEWLINE, 17, 18 },
    { TK_STR, 20, 25 }, { TK_MATMUL, 30, 33 }, { TK_NAME, 33, 36 }, { TK_EOF, 36, 36 },
  };
  Lexed L;
  lex_str(&L, src);
  assert_int_equal(L.n, (int)(sizeof want / sizeof want[0]));
  for (int i = 0; i < L.n; i++) {
    assert_int_equal(L.t[i].kind, want[i].k);
    assert_int_equal(L.t[i].start, want[i].s);
    assert_int_equal(L.t[i].end, want[i].e);
  }
}

static void test_token_names(void **state) {
  assert_string_equal(lex_token_name(TK_EOF), "end of input");
  assert_string_equal(lex_token_name(TK_PLUS), "'+'");
  assert_string_equal(lex_token_name(TK_NUM), "number");
  assert_string_equal(lex_token_name(TK_STR), "string");
  assert_string_equal(lex_token_name(TK_NAME), "name");
  assert_string_equal(lex_token_name(TK_NEWLINE), "newline");
  assert_string_equal(lex_token_name(TK_MATMUL), "'%*%'");
  assert_string_equal(lex_token_name(TK_FUNCTION), "'function'");
  assert_string_equal(lex_token_name(TK_RBRACE), "'}'");
}

static void test_statement(void **state) {
  expect_kinds("f = function(x, y = 2) { if (x > y) return(x) else y }\n",
               TK_NAME, TK_ASSIGN, TK_FUNCTION, TK_LP, TK_NAME, TK_COMMA, TK_NAME, TK_ASSIGN,
               TK_NUM, TK_RP, TK_LBRACE, TK_IF, TK_LP, TK_NAME, TK_GT, TK_NAME, TK_RP, TK_RETURN,
               TK_LP, TK_NAME, TK_RP, TK_ELSE, TK_NAME, TK_RBRACE, TK_NEWLINE, TK_EOF);
  expect_kinds("for (i in 1:n) { next; break }", TK_FOR, TK_LP, TK_NAME, TK_IN, TK_NUM, TK_COLON,
               TK_NAME, TK_RP, TK_LBRACE, TK_NEXT, TK_SEMI, TK_BREAK, TK_RBRACE, TK_EOF);
  expect_kinds("while (TRUE & !FALSE | x == NaN) x = -Inf", TK_WHILE, TK_LP, TK_TRUE, TK_AND,
               TK_NOT, TK_FALSE, TK_OR, TK_NAME, TK_EQ, TK_NAN, TK_RP, TK_NAME, TK_ASSIGN,
               TK_MINUS, TK_INF, TK_EOF);
  expect_kinds("ns::f($x, $1)", TK_NAME, TK_COLONCOLON, TK_NAME, TK_LP, TK_DOLLAR, TK_NAME,
               TK_COMMA, TK_DOLLAR, TK_NUM, TK_RP, TK_EOF);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_operators),
    cmocka_unit_test(test_operators_adjacent),
    cmocka_unit_test(test_keywords),
    cmocka_unit_test(test_keyword_prefixes_are_names),
    cmocka_unit_test(test_names),
    cmocka_unit_test(test_numbers),
    cmocka_unit_test(test_number_edges),
    cmocka_unit_test(test_strings),
    cmocka_unit_test(test_string_errors),
    cmocka_unit_test(test_newlines),
    cmocka_unit_test(test_line_comments),
    cmocka_unit_test(test_block_comments),
    cmocka_unit_test(test_unterminated_block_comment),
    cmocka_unit_test(test_illegal_characters),
    cmocka_unit_test(test_non_ascii_outside_string),
    cmocka_unit_test(test_nul_in_input),
    cmocka_unit_test(test_eof_is_sticky),
    cmocka_unit_test(test_spans),
    cmocka_unit_test(test_token_names),
    cmocka_unit_test(test_statement),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
