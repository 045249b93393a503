/*
** lexer.re — MLS tokens (LANGUAGE.md §2), compiled by re2c into build/gen/lexer.c.
** Every byte matches some rule (the final [^] gives TK_ILLEGAL), so it can never overrun.
*/
#include <stddef.h>
#include "lex.h"
#include "parser.h"

void lex_init(Lexer *lx, const char *text, uint32_t len) {
  lx->base = text;
  lx->cur = text;
  lx->lim = text + len;
  lx->err = NULL;
}

#define RET(k) do { t->kind = (k); t->end = (uint32_t)(lx->cur - lx->base); return; } while (0)
#define BAD(msg) do { lx->err = (msg); RET(TK_ILLEGAL); } while (0)

void lex_next(Lexer *lx, Token *t) {
  const char *YYMARKER = NULL;
  for (;;) {
    t->start = (uint32_t)(lx->cur - lx->base);
    const char *YYCURSOR = lx->cur;
/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:yyfill:enable = 0;

    nul      = "\x00";
    digit    = [0-9];
    exp      = [eE] [+-]? digit+;
    number   = digit+ ("." digit*)? exp? | "." digit+ exp?;
    ident    = [a-zA-Z_] [a-zA-Z0-9_.]* | "." ([a-zA-Z_.] [a-zA-Z0-9_.]*)?;
    esc      = "\\" [ntr\\"'];
    dqstr    = "\"" ([^"\\\x00] | esc)* "\"";
    sqstr    = "'" ([^'\\\x00] | esc)* "'";
    badesc   = "\"" ([^"\\\x00] | esc)* "\\" [^ntr\\"'\x00] | "'" ([^'\\\x00] | esc)* "\\" [^ntr\\"'\x00];

    nul      { lx->cur = YYCURSOR - 1;
               if (YYCURSOR - 1 >= lx->lim) { t->end = t->start; t->kind = TK_EOF; return; }
               lx->cur = YYCURSOR; BAD("unexpected NUL byte"); }
    [ \t\r\f\v]+          { lx->cur = YYCURSOR; continue; }
    "#" [^\n\x00]*        { lx->cur = YYCURSOR; continue; }
    "/*" ([^*\x00] | "*"+ [^*/\x00])* "*"+ "/" { lx->cur = YYCURSOR; continue; }
    "/*"                  { lx->cur = YYCURSOR; BAD("unterminated comment"); }
    "\n"                  { lx->cur = YYCURSOR; RET(TK_NEWLINE); }

    "if"       { lx->cur = YYCURSOR; RET(TK_IF); }
    "else"     { lx->cur = YYCURSOR; RET(TK_ELSE); }
    "while"    { lx->cur = YYCURSOR; RET(TK_WHILE); }
    "for"      { lx->cur = YYCURSOR; RET(TK_FOR); }
    "parfor"   { lx->cur = YYCURSOR; RET(TK_PARFOR); }   /* DML's parallel for (LANGUAGE.md §8) */
    "in"       { lx->cur = YYCURSOR; RET(TK_IN); }
    "function" { lx->cur = YYCURSOR; RET(TK_FUNCTION); }
    "return"   { lx->cur = YYCURSOR; RET(TK_RETURN); }
    "break"    { lx->cur = YYCURSOR; RET(TK_BREAK); }
    "next"     { lx->cur = YYCURSOR; RET(TK_NEXT); }
    "TRUE"     { lx->cur = YYCURSOR; RET(TK_TRUE); }
    "FALSE"    { lx->cur = YYCURSOR; RET(TK_FALSE); }
    "Inf"      { lx->cur = YYCURSOR; RET(TK_INF); }
    "NaN"      { lx->cur = YYCURSOR; RET(TK_NAN); }
    "NULL"     { lx->cur = YYCURSOR; RET(TK_NULL); }
    "NA"       { lx->cur = YYCURSOR; RET(TK_NA); }
    "repeat"   { lx->cur = YYCURSOR; RET(TK_REPEAT); }
    ident      { lx->cur = YYCURSOR; RET(TK_NAME); }
    number     { lx->cur = YYCURSOR; RET(TK_NUM); }
    digit+ exp? "L" { lx->cur = YYCURSOR; RET(TK_NUM); }   /* R's integer literal 3L: the number 3 */
    dqstr | sqstr { lx->cur = YYCURSOR; RET(TK_STR); }
    badesc     { lx->cur = YYCURSOR; t->start = (uint32_t)(lx->cur - lx->base) - 2;
                 BAD("invalid escape sequence in string"); }
    "\"" ([^"\\\x00] | esc)* "\x00" | "'" ([^'\\\x00] | esc)* "\x00"
               { if (YYCURSOR - 1 < lx->lim) {       /* a NUL inside, not the end of input */
                   lx->cur = YYCURSOR; t->start = (uint32_t)(YYCURSOR - 1 - lx->base);
                   BAD("NUL byte inside a string");
                 }
                 lx->cur = lx->lim; BAD("unterminated string"); }
    ["']       { lx->cur = lx->lim; BAD("unterminated string"); }

    "%*%"  { lx->cur = YYCURSOR; RET(TK_MATMUL); }
    "%%"   { lx->cur = YYCURSOR; RET(TK_MOD); }
    "%/%"  { lx->cur = YYCURSOR; RET(TK_INTDIV); }
    "%" [^%\n\x00]* "%" { lx->cur = YYCURSOR; BAD("unknown operator"); }
    "+="   { lx->cur = YYCURSOR; RET(TK_PLUSEQ); }   /* DML's x += e */
    "+"    { lx->cur = YYCURSOR; RET(TK_PLUS); }
    "-"    { lx->cur = YYCURSOR; RET(TK_MINUS); }
    "*"    { lx->cur = YYCURSOR; RET(TK_STAR); }
    "/"    { lx->cur = YYCURSOR; RET(TK_SLASH); }
    "^"    { lx->cur = YYCURSOR; RET(TK_CARET); }
    "**"   { lx->cur = YYCURSOR; RET(TK_CARET); }   /* R accepts ** for ^ */
    "::"   { lx->cur = YYCURSOR; RET(TK_COLONCOLON); }
    ":"    { lx->cur = YYCURSOR; RET(TK_COLON); }
    "=="   { lx->cur = YYCURSOR; RET(TK_EQ); }
    "!="   { lx->cur = YYCURSOR; RET(TK_NE); }
    "<="   { lx->cur = YYCURSOR; RET(TK_LE); }
    ">="   { lx->cur = YYCURSOR; RET(TK_GE); }
    "<-"   { lx->cur = YYCURSOR; RET(TK_LARROW); }
    "<"    { lx->cur = YYCURSOR; RET(TK_LT); }
    ">"    { lx->cur = YYCURSOR; RET(TK_GT); }
    "!"    { lx->cur = YYCURSOR; RET(TK_NOT); }
    "&&"   { lx->cur = YYCURSOR; RET(TK_ANDAND); }
    "||"   { lx->cur = YYCURSOR; RET(TK_OROR); }
    "&"    { lx->cur = YYCURSOR; RET(TK_AND); }
    "|"    { lx->cur = YYCURSOR; RET(TK_OR); }
    "="    { lx->cur = YYCURSOR; RET(TK_ASSIGN); }
    "("    { lx->cur = YYCURSOR; RET(TK_LP); }
    ")"    { lx->cur = YYCURSOR; RET(TK_RP); }
    "["    { lx->cur = YYCURSOR; RET(TK_LB); }
    "]"    { lx->cur = YYCURSOR; RET(TK_RB); }
    "{"    { lx->cur = YYCURSOR; RET(TK_LBRACE); }
    "}"    { lx->cur = YYCURSOR; RET(TK_RBRACE); }
    ","    { lx->cur = YYCURSOR; RET(TK_COMMA); }
    ";"    { lx->cur = YYCURSOR; RET(TK_SEMI); }
    "$"    { lx->cur = YYCURSOR; RET(TK_DOLLAR); }
    [\x80-\xff] { lx->cur = YYCURSOR; BAD("unexpected non-ASCII byte (only strings and comments may hold UTF-8)"); }
    [^]    { lx->cur = YYCURSOR; BAD("unexpected character"); }
*/
  }
}

/* grep ORDER TK: spellings for messages, by token code. */
const char *lex_token_name(int kind) {
  switch (kind) {
  case TK_EOF: return "end of input";
  case TK_NEWLINE: return "newline";
  case TK_NUM: return "number";
  case TK_STR: return "string";
  case TK_NAME: return "name";
  case TK_IF: return "'if'";
  case TK_ELSE: return "'else'";
  case TK_WHILE: return "'while'";
  case TK_FOR: return "'for'";
  case TK_PARFOR: return "'parfor'";
  case TK_IN: return "'in'";
  case TK_FUNCTION: return "'function'";
  case TK_RETURN: case TK_RETURNS: return "'return'";
  case TK_BREAK: return "'break'";
  case TK_NEXT: return "'next'";
  case TK_TRUE: return "'TRUE'";
  case TK_FALSE: return "'FALSE'";
  case TK_INF: return "'Inf'";
  case TK_NAN: return "'NaN'";
  case TK_NULL: return "'NULL'";
  case TK_NA: return "'NA'";
  case TK_REPEAT: return "'repeat'";
  case TK_MATMUL: return "'%*%'";
  case TK_MOD: return "'%%'";
  case TK_INTDIV: return "'%/%'";
  case TK_PLUS: return "'+'";
  case TK_MINUS: return "'-'";
  case TK_STAR: return "'*'";
  case TK_SLASH: return "'/'";
  case TK_CARET: return "'^'";
  case TK_COLONCOLON: return "'::'";
  case TK_COLON: return "':'";
  case TK_IXCOLON: return "':'";
  case TK_EQ: return "'=='";
  case TK_NE: return "'!='";
  case TK_LE: return "'<='";
  case TK_GE: return "'>='";
  case TK_LARROW: return "'<-'";
  case TK_LT: return "'<'";
  case TK_GT: return "'>'";
  case TK_NOT: return "'!'";
  case TK_ANDAND: return "'&&'";
  case TK_OROR: return "'||'";
  case TK_AND: return "'&'";
  case TK_OR: return "'|'";
  case TK_ASSIGN: return "'='";
  case TK_PLUSEQ: return "'+='";
  case TK_LP: return "'('";
  case TK_RP: return "')'";
  case TK_LB: return "'['";
  case TK_RB: return "']'";
  case TK_LBRACE: return "'{'";
  case TK_RBRACE: return "'}'";
  case TK_COMMA: return "','";
  case TK_SEMI: return "';'";
  case TK_DOLLAR: return "'$'";
  case TK_AS: return "'as'";
  default: return "token";
  }
}
