/*
** parser.y — the MLS grammar (LANGUAGE.md §2–§9) for Lemon. Actions are one line: they call
** the ast_* constructors of src/ast.c and never evaluate. Newline rules live in the driver
** (src/parse.c), which drops the newlines that cannot end a statement before feeding tokens.
*/
%name mlsParser
%token_prefix TK_
%token_type {Token}
%extra_argument {Parse *P}
%default_type {AstNode*}
%stack_size 20000

%include {
#include <assert.h>
#include "parse.h"
#include "ast.h"
#define YYNOERRORRECOVERY 1
}

/* the parser's size, so that the driver (src/parse.c) can keep one in memory of its own and
** reuse it (mlsParserInit/mlsParserFinalize) */
%code {
size_t mlsParserSize(void) { return sizeof(yyParser); }
}

%syntax_error { parse_syntax_error(P, yymajor, yyminor); }
%stack_overflow { parse_error_at(P, P->last, "expression nested too deeply"); }

/* Lowest precedence first (LANGUAGE.md §4). FUNC/IFX give the bodies of function, if, while
** and for the lowest level, so a body takes everything that follows it (as in R). */
%nonassoc FUNC.
%nonassoc IFX.
%nonassoc AS.
%nonassoc ELSE.
%right ASSIGN LARROW PLUSEQ.
%left OROR.
%left ANDAND.
%left OR.
%left AND.
%right NOT.
%left EQ NE LT LE GT GE.             /* a chain only in .dml (parse_compare) */
%left PLUS MINUS.
%left STAR SLASH.
%left MATMUL MOD INTDIV.
%left COLON.
%right UMINUS.
%right CARET.
%left LP LB DOLLAR COLONCOLON.

/* Tokens that no rule uses still get codes, so parser.h is the one enum (SQLite). */
%token NEWLINE SEMI RETURNS.

chunk ::= stmts(A).                          { P->root = ast_block(P, A, P->whole); }

%type stmts {NodeList*}
stmts(A) ::= stmt_opt(S).                    { A = ast_list_new(P); ast_list_add(P, A, S); }
stmts(A) ::= stmts(A) sep stmt_opt(S).       { ast_list_add(P, A, S); }
sep ::= NEWLINE.
sep ::= SEMI.

stmt_opt(A) ::= .                            { A = NULL; }
stmt_opt(A) ::= stmt(S).                     { A = S; }

stmt(A) ::= expr(E). [FUNC]                  { A = E; }
stmt(A) ::= expr(L) ASSIGN stmt(R).          { A = ast_assign(P, L, R); }
stmt(A) ::= expr(L) LARROW stmt(R).          { A = ast_assign(P, L, R); }
stmt(A) ::= expr(L) PLUSEQ expr(R).          { A = ast_assign(P, L, ast_binary(P, AST_BINARY, OP_ADD, L, R)); }
stmt(A) ::= IF(T) LP expr(C) RP stmt(S). [IFX]           { A = ast_if(P, T, C, S, NULL); }
stmt(A) ::= IF(T) LP expr(C) RP stmt(S) ELSE stmt(E).    { A = ast_if(P, T, C, S, E); }
stmt(A) ::= WHILE(T) LP expr(C) RP stmt(S). [IFX]        { A = ast_while(P, T, C, S); }
stmt(A) ::= REPEAT(T) stmt(S). [IFX]                     { A = ast_while(P, T, ast_bool(P, T, true), S); }   /* R's repeat: while (TRUE) */
stmt(A) ::= FOR(T) LP NAME(V) IN forseq(E) loopopts(O) RP stmt(S). [IFX]    { parse_loop_options(P, O); A = ast_for(P, T, V, E, S); }
stmt(A) ::= PARFOR(T) LP NAME(V) IN forseq(E) loopopts(O) RP stmt(S). [IFX] { bool r = parse_loop_options(P, O); A = ast_for(P, T, V, E, S); if (r) A->flags |= AST_F_REMOTE; }
forseq(A) ::= expr(E).                       { A = E; }
forseq(A) ::= expr(L) IXCOLON expr(R).       { A = ast_binary(P, AST_BINARY, OP_RANGE, L, R); }
/* DML's loop options (for (i in 1:n, check=0), parfor (..., par=4, mode=LOCAL)): checked by
** parse_loop_options, never evaluated; both loops then run as one sequential for, except a
** parfor with mode=REMOTE... under mpirun, spread over the ranks (src/mpi/parfor.c). */
%type loopopts {NodeList*}
loopopts(A) ::= .                            { A = ast_list_new(P); }
loopopts(A) ::= loopopts(A) COMMA NAME(N) ASSIGN expr(E). { ast_list_add(P, A, ast_named_arg(P, N, E)); }
stmt(A) ::= BREAK(T).                        { A = ast_leaf(P, AST_BREAK, T); }
stmt(A) ::= NEXT(T).                         { A = ast_leaf(P, AST_NEXT, T); }
stmt(A) ::= expr(E) AS NAME(N).              { A = ast_source_as(P, E, N); }

expr(A) ::= NUM(T).                          { A = ast_num(P, T); }
expr(A) ::= STR(T).                          { A = ast_str(P, T); }
expr(A) ::= TRUE(T).                         { A = ast_bool(P, T, true); }
expr(A) ::= FALSE(T).                        { A = ast_bool(P, T, false); }
expr(A) ::= INF(T).                          { A = ast_const(P, T, 1.0 / 0.0); }
expr(A) ::= NAN(T).                          { A = ast_const(P, T, 0.0 / 0.0); }
expr(A) ::= NULL(T).                         { A = ast_null(P, T); }
expr(A) ::= NA(T).                           { A = ast_const(P, T, mls_na()); }   /* R's NA (mls.h) */
expr(A) ::= NAME(T).                         { A = ast_name(P, T); }
expr(A) ::= DOLLAR(D) NAME(T).               { A = ast_param(P, D, T); }
expr(A) ::= DOLLAR(D) NUM(T).                { A = ast_param(P, D, T); }
expr(A) ::= NAME(N) COLONCOLON NAME(M).      { A = ast_nsref(P, N, M); }
expr(A) ::= LP(L) expr(E) RP(R).             { A = ast_paren(P, E, L, R); }
expr(A) ::= LBRACE(L) stmts(S) RBRACE(R).    { A = ast_block(P, S, ast_span2(L, R)); }
expr(A) ::= LB(L) RB(R).                     { A = ast_matrix(P, NULL, ast_span2(L, R)); }
expr(A) ::= LB(L) mrows(M) RB(R).            { A = ast_matrix(P, M, ast_span2(L, R)); }
expr(A) ::= expr(F) LP args(G) RP(R).        { A = ast_call(P, F, G, R); }
expr(A) ::= expr(X) LB ixargs(I) RB(R).      { A = ast_index(P, X, I, R); }
expr(A) ::= expr(X) DOLLAR NAME(N).          { A = ast_member(P, X, N); }
expr(A) ::= RETURN(T) LP RP(R).              { A = ast_return(P, T, NULL, R); }
expr(A) ::= RETURN(T) LP expr(E) RP(R).      { A = ast_return(P, T, E, R); }
expr(A) ::= FUNCTION(T) LP params(Q) RP stmt(B). [FUNC]  { A = ast_function(P, T, Q, NULL, B); }
expr(A) ::= FUNCTION(T) LP params(Q) RP RETURNS LP rets(R) RP expr(B). [FUNC] { A = ast_function(P, T, Q, R, B); }

expr(A) ::= expr(L) OROR expr(R).            { A = ast_binary(P, AST_OROR, OP_NONE, L, R); }
expr(A) ::= expr(L) ANDAND expr(R).          { A = ast_binary(P, AST_ANDAND, OP_NONE, L, R); }
expr(A) ::= expr(L) OR expr(R).              { A = ast_binary(P, AST_BINARY, OP_OR, L, R); }
expr(A) ::= expr(L) AND expr(R).             { A = ast_binary(P, AST_BINARY, OP_AND, L, R); }
expr(A) ::= NOT(T) expr(E).                  { A = ast_unary(P, T, OP_NOT, E); }
expr(A) ::= expr(L) EQ(T) expr(R).         { A = parse_compare(P, OP_EQ, L, T, R); }
expr(A) ::= expr(L) NE(T) expr(R).         { A = parse_compare(P, OP_NE, L, T, R); }
expr(A) ::= expr(L) LT(T) expr(R).         { A = parse_compare(P, OP_LT, L, T, R); }
expr(A) ::= expr(L) LE(T) expr(R).         { A = parse_compare(P, OP_LE, L, T, R); }
expr(A) ::= expr(L) GT(T) expr(R).         { A = parse_compare(P, OP_GT, L, T, R); }
expr(A) ::= expr(L) GE(T) expr(R).         { A = parse_compare(P, OP_GE, L, T, R); }
expr(A) ::= expr(L) PLUS expr(R).            { A = ast_binary(P, AST_BINARY, OP_ADD, L, R); }
expr(A) ::= expr(L) MINUS expr(R).           { A = ast_binary(P, AST_BINARY, OP_SUB, L, R); }
expr(A) ::= expr(L) STAR expr(R).            { A = ast_binary(P, AST_BINARY, OP_MUL, L, R); }
expr(A) ::= expr(L) SLASH expr(R).           { A = ast_binary(P, AST_BINARY, OP_DIV, L, R); }
expr(A) ::= expr(L) MATMUL expr(R).          { A = ast_binary(P, AST_BINARY, OP_MATMUL, L, R); }
expr(A) ::= expr(L) MOD expr(R).             { A = ast_binary(P, AST_BINARY, P->dml ? OP_MODDML : OP_MOD, L, R); }
expr(A) ::= expr(L) INTDIV expr(R).          { A = ast_binary(P, AST_BINARY, P->dml ? OP_INTDIVDML : OP_INTDIV, L, R); }
expr(A) ::= expr(L) COLON expr(R).           { A = ast_binary(P, AST_BINARY, OP_RANGE, L, R); }
expr(A) ::= MINUS(T) expr(E). [UMINUS]       { A = ast_unary(P, T, OP_NEG, E); }
expr(A) ::= PLUS(T) expr(E). [UMINUS]        { A = ast_unary(P, T, OP_NONE, E); }
expr(A) ::= expr(L) CARET expr(R).           { A = ast_binary(P, AST_BINARY, OP_POW, L, R); }

%type mrows {NodeList*}
%type mrow {NodeList*}
mrows(A) ::= mrow(R).                        { A = ast_list_new(P); ast_list_add(P, A, ast_row(P, R)); }
mrows(A) ::= mrows(A) SEMI mrow(R).          { ast_list_add(P, A, ast_row(P, R)); }
mrow(A) ::= expr(E).                         { A = ast_list_new(P); ast_list_add(P, A, E); }
mrow(A) ::= mrow(A) COMMA expr(E).           { ast_list_add(P, A, E); }

%type args {NodeList*}
%type arglist {NodeList*}
args(A) ::= .                                { A = ast_list_new(P); }
args(A) ::= arglist(L).                      { A = L; }
arglist(A) ::= arg(E).                       { A = ast_list_new(P); ast_list_add(P, A, E); }
arglist(A) ::= arglist(A) COMMA arg(E).      { ast_list_add(P, A, E); }
arg(A) ::= expr(E).                          { A = E; }
arg(A) ::= NAME(N) ASSIGN expr(E).           { A = ast_named_arg(P, N, E); }
arg(A) ::= STR(N) ASSIGN expr(E).            { A = ast_named_arg(P, N, E); }
arg(A) ::= NAME(N) ASSIGN(Q).                { A = ast_empty_arg(P, N, Q); }
arg(A) ::= STR(N) ASSIGN(Q).                 { A = ast_empty_arg(P, N, Q); }

%type ixargs {NodeList*}
ixargs(A) ::= ixarg(X).                      { A = ast_list_new(P); ast_list_add(P, A, X); }
ixargs(A) ::= ixarg(X) COMMA ixarg(Y).       { A = ast_list_new(P); ast_list_add(P, A, X); ast_list_add(P, A, Y); }
ixarg(A) ::= .                               { A = NULL; }
ixarg(A) ::= expr(E).                        { A = E; }
/* DML's range separator (LANGUAGE.md §7): a top-level ':' of an index, the loosest binding
** there; parse.c turns such a COLON into IXCOLON (also in a for header, §8) */
ixarg(A) ::= expr(L) IXCOLON expr(R).        { A = ast_binary(P, AST_BINARY, OP_RANGE, L, R); }

%type params {NodeList*}
%type paramlist {NodeList*}
%type rets {NodeList*}
%type typespec {Token}
params(A) ::= .                              { A = ast_list_new(P); }
params(A) ::= paramlist(L).                  { A = L; }
paramlist(A) ::= param(E).                   { A = ast_list_new(P); ast_list_add(P, A, E); }
paramlist(A) ::= paramlist(A) COMMA param(E). { ast_list_add(P, A, E); }
param(A) ::= NAME(N).                        { A = ast_param_def(P, NULL, N, NULL); }
param(A) ::= NAME(N) ASSIGN expr(D).         { A = ast_param_def(P, NULL, N, D); }
param(A) ::= typespec(T) NAME(N).            { A = ast_param_def(P, &T, N, NULL); }
param(A) ::= typespec(T) NAME(N) ASSIGN expr(D). { A = ast_param_def(P, &T, N, D); }
typespec(A) ::= NAME(T).                     { A = T; }
typespec(A) ::= NAME(T) LB NAME RB(R).       { A = T; A.end = R.end; }
rets(A) ::= param(E).                        { A = ast_list_new(P); ast_list_add(P, A, E); }
rets(A) ::= rets(A) COMMA param(E).          { ast_list_add(P, A, E); }
