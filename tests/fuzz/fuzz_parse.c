/*
** fuzz_parse.c — libFuzzer harness: the lexer, the parser and the resolver on any bytes, as a
** .mls file and as a .dml file (DML's newline rule). Nothing runs.
*/
#include "fuzz.h"

static void parse_as(Interp *I, const char *name, const uint8_t *data, size_t size) {
  Source *src = source_new(name, (const char *)data, size);
  ParseError pe;
  Chunk *ch = parse_chunk(&I->syms, &I->spare_parser, src, &pe);
  if (ch) {
    char msg[256];
    Span sp;
    if (!resolve_chunk(I, ch, false, msg, sizeof msg, &sp, NULL)) diag_report(I->errf, src, sp, "error", msg);
    chunk_release(ch);
  } else {
    diag_report(I->errf, src, pe.span, "error", pe.msg);
  }
  source_release(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  static Interp *I;                        /* one for the process: only its symbols grow */
  if (!I) I = fuzz_interp(NULL, NULL);
  parse_as(I, "fuzz.mls", data, size);
  parse_as(I, "fuzz.dml", data, size);
  return 0;
}
