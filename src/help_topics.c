/*
** help_topics.c — the texts of ?for, ?if, ?"%*%" and the other keywords and operators
** (LANGUAGE.md §2, §4, §8, §9). Several names may share a text ("&&" and "||").
*/
#include <string.h>
#include "help_topics.h"

static const char doc_if[] =
  "if (cond) expr [else expr]\n\n"
  "Runs the first branch when cond is TRUE, else the else branch (if any). cond must be a\n"
  "boolean, a number or a 1x1 matrix (nonzero is TRUE); NaN or another shape is an error.\n"
  "The value of an if is the value of the branch that ran. `else` may start the line after\n"
  "the if branch (as DML allows). See also ?ifelse for the elementwise choice.";
static const char doc_for[] =
  "for (v in seq) body\n\n"
  "Runs body once for each element of seq: a:b (counts down when a > b, as R), seq(from, to,\n"
  "by), seq_len(n) (no iteration when n is 0), the elements of a matrix in row-major order,\n"
  "or the items of a list. Inside [ ] and a for header a top-level ':' is DML's range:\n"
  "for (i in 1:n-1) runs from 1 to n-1. break leaves the loop, next skips to the next\n"
  "element. for (i in progress(1:n)) draws a progress bar on a terminal (?progress).\n"
  "parfor (v in a:b, opt=value) is a for whose iterations may run in parallel (DML).";
static const char doc_while[] =
  "while (cond) body\n\n"
  "Runs body while cond is TRUE (cond as for if). break leaves the loop, next goes back to\n"
  "the test. Ctrl-C interrupts a loop that runs too long.";
static const char doc_repeat[] =
  "repeat body\n\n"
  "Runs body again and again until a break leaves it (as R's repeat; while (TRUE) body).";
static const char doc_na[] =
  "NA\n\n"
  "R's missing value: a NaN that prints as NA and that arithmetic carries (NA + 1 is NA).\n"
  "is.na(x) is TRUE for NA and NaN, is.nan(x) for NaN only; sum, mean, max, min, prod, sd,\n"
  "var and median take na.rm = TRUE to leave both out. A comparison with NA is FALSE (R: NA).";
static const char doc_null[] =
  "NULL\n\n"
  "The empty value: what print() and assignments return, and a value of its own (x = NULL;\n"
  "is.null(x) is TRUE). It is a reserved word: NULL = 1 is an error.";
static const char doc_function[] =
  "function(params) body\n\n"
  "A closure: f = function(x, y = 2) { x * y }. The last expression is the value unless\n"
  "return(value) ends earlier. Defaults are evaluated at call time; calls take positional\n"
  "then named arguments. DML style: function(matrix[double] X) return (matrix[double] Y)\n"
  "{ ... } with typed parameters and named results. Scoping is lexical; assigning inside\n"
  "a function makes a local variable. #' lines just above a definition are its help().";
static const char doc_return[] =
  "return(value)\n\nEnds the running function with value (NULL without one); at the top level of a\nscript it ends the script.";
static const char doc_break[] =
  "break, next\n\nbreak leaves the innermost for/while loop; next skips the rest of its body and goes on\nwith the next iteration.";
static const char doc_bool[] =
  "TRUE, FALSE\n\nThe booleans. In arithmetic they are 1 and 0. A comparison of matrices gives a 0/1\n"
  "matrix marked logical, so x[x > 0] selects by mask (?\"[\").";
static const char doc_special[] =
  "Inf, NaN\n\nThe IEEE infinity and not-a-number. is.nan(x) and is.infinite(x) test for them;\nNaN propagates through arithmetic.";
static const char doc_assign[] =
  "x = value, x <- value, x += value\n\n"
  "Binds a name (statements only). Values have value semantics: y = x; y[1] = 0 leaves x as\n"
  "it was. X[i, j] = v, X[mask] = v and L$name = v assign into a part. [a, b] = f(x)\n"
  "unpacks a multi-return call or a list. x += e is x = x + e.";
static const char doc_arith[] =
  "+ - * / ^ %% %/%\n\n"
  "Elementwise arithmetic with broadcasting (LANGUAGE.md §5): a matrix with a number, a row\n"
  "vector or a column vector of matching length. ^ is right-associative and binds tighter\n"
  "than unary minus (-2^2 is -4). %% is the remainder with the divisor's sign, %/% the\n"
  "floored quotient (as R); in code of a .dml file both follow SystemDS (the dividend's sign:\n"
  "-7 %% 3 is -1, -7 %/% 3 is -2). + with a string operand concatenates (\"loss \" + 0.5), as DML.";
static const char doc_matmul[] =
  "A %*% B\n\n"
  "The matrix product (OpenBLAS's dgemm): A is n x k and B is k x m, giving n x m; other\n"
  "shapes are an error naming both. Binds tighter than * and /. t(A) %*% B reads A\n"
  "transposed without copying it. Differentiable: grad gives dA = G %*% t(B), dB = t(A) %*% G.";
static const char doc_cmp[] =
  "== != < <= > >=\n\n"
  "Elementwise comparisons with broadcasting: numbers and booleans give TRUE/FALSE,\n"
  "matrices a 0/1 matrix marked logical, so x[x > 1] selects by mask (?\"[\"). Strings\n"
  "compare as text. Not differentiable (their gradient is zero).";
static const char doc_logic[] =
  "! & | && ||\n\n"
  "! negates. & and | are elementwise (matrices give a logical 0/1 matrix, a mask);\n"
  "&& and || take single values and short-circuit: the right side runs only when needed.";
static const char doc_range[] =
  "from:to\n\n"
  "The column vector from, from+1, ..., to (counting down when from > to, as R). Binds\n"
  "tighter than + and -: 1:n-1 is (1:n)-1 outside [ ], while inside [ ] and a for header a\n"
  "top-level ':' is DML's range separator (X[1:n-1, ] is rows 1 to n-1). seq_len(n) gives\n"
  "1..n with no element when n is 0.";
static const char doc_index[] =
  "X[i, j], X[i, ], X[, j], v[k], X[mask, ], v[v > 0], L[k], L[[k]]\n\n"
  "1-based indexing (LANGUAGE.md §7). An index is a number, a range a:b or a vector of\n"
  "positions (repeats allowed). A logical mask selects where it is TRUE: a vector of 0/1 as\n"
  "long as the dimension it indexes, made by a comparison (x > 1, its result is marked\n"
  "logical) or holding a 0 (never a position). x[x > 1] = 0 assigns through a mask; X[M]\n"
  "with M of X's shape gives the selected elements as a column, in row-major order. A mask\n"
  "of another length is an error. All of these carry gradients under grad.";
static const char doc_member[] =
  "L$name, ns::name\n\nL$name is the element of list L called name (NULL when absent); L$name = v sets or\n"
  "appends it. ns::name is name from a namespace made by source(\"file.mls\") as ns;\n"
  "?ns::name shows its help (the stdlib's nn.mls is found without a source()).";
static const char doc_help[] =
  "?name, ?\"op\", ?ns::name\n\nThe REPL's shorthand for help(\"name\"): ?rowSums, ?\"%*%\", ?for, ?nn::adam.";

static const struct { const char *name; const char *doc; } topics[] = {
  { "!", doc_logic }, { "!=", doc_cmp }, { "$", doc_member }, { "%%", doc_arith }, { "%*%", doc_matmul },
  { "%/%", doc_arith }, { "&", doc_logic }, { "&&", doc_logic }, { "*", doc_arith }, { "+", doc_arith },
  { "+=", doc_assign }, { "-", doc_arith }, { "/", doc_arith }, { ":", doc_range }, { "::", doc_member },
  { "<", doc_cmp }, { "<-", doc_assign }, { "<=", doc_cmp }, { "=", doc_assign }, { "==", doc_cmp },
  { ">", doc_cmp }, { ">=", doc_cmp }, { "?", doc_help }, { "FALSE", doc_bool }, { "Inf", doc_special },
  { "NA", doc_na }, { "NULL", doc_null }, { "NaN", doc_special }, { "TRUE", doc_bool }, { "[", doc_index }, { "[[", doc_index }, { "^", doc_arith },
  { "break", doc_break }, { "else", doc_if }, { "for", doc_for }, { "function", doc_function },
  { "if", doc_if }, { "in", doc_for }, { "next", doc_break }, { "parfor", doc_for }, { "repeat", doc_repeat }, { "return", doc_return },
  { "while", doc_while }, { "|", doc_logic }, { "||", doc_logic },
};

const char *help_topic(const char *topic) {
  for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++)
    if (strcmp(topics[i].name, topic) == 0) return topics[i].doc;
  return NULL;
}

const char *help_topic_name(int i) {
  return i >= 0 && (size_t)i < sizeof topics / sizeof topics[0] ? topics[i].name : NULL;
}
