/*
** clparam.c — the message for a command-line value ($name) that was not given: every $name the
** script reads outside ifdef() and that was not given, at once, each with its meaning from the
** script's header comment (DML's "# name  Type  default  meaning" table, or "# name  meaning").
*/
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "interp/interp.h"
#include "lex.h"
#include "parser.h"

#define MAX_MISSING 32

typedef struct Missing { const char *name; uint32_t len; } Missing;

static bool given(const Interp *I, const char *name, uint32_t len) {
  for (int i = 0; i < I->nparams; i++) {
    const char *g = I->params[i].name->name;
    if (strlen(g) == len && memcmp(g, name, len) == 0) return true;
  }
  return false;
}

/* The $names of src read outside ifdef's first argument and not given, in order, distinct;
** positional ones ($1) are left out (they have no name to pass). Returns how many. */
static int collect(const Interp *I, const Source *src, Missing *out) {
  Lexer lx;
  lex_init(&lx, src->text, src->len);
  Token prev[3] = { { TK_EOF, 0, 0 }, { TK_EOF, 0, 0 }, { TK_EOF, 0, 0 } };
  int n = 0;
  for (;;) {
    Token t;
    lex_next(&lx, &t);
    if (t.kind == TK_EOF || t.kind == TK_ILLEGAL) break;
    if (t.kind == TK_COMMENT || t.kind == TK_NEWLINE) continue;
    if (t.kind == TK_NAME && prev[0].kind == TK_DOLLAR) {
      const char *nm = src->text + t.start;
      uint32_t len = t.end - t.start;
      bool in_ifdef = prev[1].kind == TK_LP && prev[2].kind == TK_NAME &&
                      prev[2].end - prev[2].start == 5 && memcmp(src->text + prev[2].start, "ifdef", 5) == 0;
      bool dup = false;
      for (int i = 0; i < n && !dup; i++) dup = out[i].len == len && memcmp(out[i].name, nm, len) == 0;
      if (!in_ifdef && !dup && !given(I, nm, len) && n < MAX_MISSING) out[n++] = (Missing){ nm, len };
    }
    prev[2] = prev[1];
    prev[1] = prev[0];
    prev[0] = t;
  }
  return n;
}

static bool is_type_word(const char *w, size_t len) {
  static const char *const types[] = { "string", "int", "integer", "double", "boolean", "bool",
                                       "matrix", "frame", "list", "scalar", NULL };
  for (int i = 0; types[i]; i++) {
    size_t k = strlen(types[i]);
    if (len >= k && strncasecmp(w, types[i], k) == 0 && (len == k || w[k] == '[')) return true;
  }
  return false;
}

/* The meaning of $name from the leading comment lines of src (before the first line of code):
** the rest of the first line "# name ..." (or "# $name ..."), less a type and a default column
** when the second word is a type. Writes at most cap - 1 bytes; "" when there is none. */
static void meaning(const Source *src, const char *name, uint32_t len, char *buf, size_t cap) {
  buf[0] = '\0';
  const char *p = src->text;
  if (p[0] == '#' && p[1] == '!') p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p);
  while (*p) {
    const char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    if (q < eol && *q != '#') return;              /* the first line of code ends the header */
    if (q < eol) {
      q++;
      while (q < eol && *q == '\'') q++;            /* #' documentation lines too */
      while (q < eol && isspace((unsigned char)*q)) q++;
      if (q < eol && *q == '$') q++;
      if ((size_t)(eol - q) > len && memcmp(q, name, len) == 0 && isspace((unsigned char)q[len])) {
        const char *w = q + len;
        while (w < eol && isspace((unsigned char)*w)) w++;
        const char *we = w;
        while (we < eol && !isspace((unsigned char)*we)) we++;
        if (is_type_word(w, (size_t)(we - w))) {    /* "String  ---  meaning": skip two words */
          for (int k = 0; k < 2; k++) {
            while (w < eol && isspace((unsigned char)*w)) w++;
            while (w < eol && !isspace((unsigned char)*w)) w++;
          }
          while (w < eol && isspace((unsigned char)*w)) w++;
        }
        size_t o = 0;                               /* runs of blanks become one space */
        for (; w < eol && o + 1 < cap; w++) {
          if (isspace((unsigned char)*w)) {
            if (o > 0 && buf[o - 1] != ' ') buf[o++] = ' ';
          } else {
            buf[o++] = *w;
          }
        }
        while (o > 0 && buf[o - 1] == ' ') o--;
        buf[o] = '\0';
        return;
      }
    }
    p = *eol ? eol + 1 : eol;
  }
}

/*
** Fills buf with the message for the $name (not given) that the script is reading: the one
** name as "command-line value '$k' was not given (pass -nvargs k=...)", with ": meaning" when
** the header has one; several as "command-line values were not given: '$a' (meaning), '$b';
** pass -nvargs a=... b=...". name is borrowed; nothing is retained.
*/
void interp_missing_params_msg(Interp *I, const char *name, char *buf, size_t cap) {
  Missing miss[MAX_MISSING];
  int n = I->src ? collect(I, I->src, miss) : 0;
  uint32_t nlen = (uint32_t)strlen(name);
  bool listed = false;
  for (int i = 0; i < n && !listed; i++) listed = miss[i].len == nlen && memcmp(miss[i].name, name, nlen) == 0;
  if (!listed) {                                    /* read from elsewhere: it comes first */
    if (n == MAX_MISSING) n--;
    memmove(miss + 1, miss, (size_t)n * sizeof *miss);
    miss[0] = (Missing){ name, nlen };
    n++;
  }
  char m[160];
  if (n == 1) {
    if (I->src) meaning(I->src, name, nlen, m, sizeof m);
    else m[0] = '\0';
    snprintf(buf, cap, "command-line value '$%s' was not given (pass -nvargs %s=...)%s%s", name, name,
             m[0] ? ": " : "", m);
    return;
  }
  size_t o = (size_t)snprintf(buf, cap, "command-line values were not given:");
  for (int i = 0; i < n && o < cap; i++) {
    meaning(I->src, miss[i].name, miss[i].len, m, sizeof m);
    o += (size_t)snprintf(buf + o, cap - o, "%s '$%.*s'%s%s%s", i ? "," : "", (int)miss[i].len, miss[i].name,
                          m[0] ? " (" : "", m, m[0] ? ")" : "");
  }
  if (o < cap) o += (size_t)snprintf(buf + o, cap - o, "; pass -nvargs");
  for (int i = 0; i < n && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, " %.*s=...", (int)miss[i].len, miss[i].name);
  if (o >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);   /* cut: say so */
}
