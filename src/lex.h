/*
** lex.h — the re2c lexer (grammar/lexer.re): one token at a time from a NUL-terminated buffer.
** Token codes are the TK_* of the Lemon-generated parser.h: one enum for lexer, parser and tree.
*/
#ifndef MLS_LEX_H
#define MLS_LEX_H

#include "mls.h"

typedef struct Token {
  int kind;         /* TK_* */
  uint32_t start;   /* byte offsets into the source */
  uint32_t end;
} Token;

typedef struct Lexer {
  const char *base;   /* start of the buffer (offset 0) */
  const char *cur;    /* next byte to read */
  const char *lim;    /* the terminating NUL */
  const char *err;    /* message for TK_ILLEGAL, static text */
} Lexer;

void lex_init(Lexer *lx, const char *text, uint32_t len);
/* Fills *t with the next token; TK_EOF (0) at the end, TK_ILLEGAL with lx->err on bad input. */
void lex_next(Lexer *lx, Token *t);
/* The spelling of a token kind for messages: "'+'", "number", "end of input". */
const char *lex_token_name(int kind);

/* Pseudo token codes that are not grammar terminals. */
#define TK_EOF 0
#define TK_ILLEGAL 1000
#define TK_COMMENT 1001

#endif
