/*
** frame_map.c — map(F, "x -> expr") (docs/frames.md "map"): SystemDS compiles the Java lambda;
** MLS interprets the small Java subset the SystemDS builtins write, cell by cell: the variable,
** string and number literals, the String methods toLowerCase, toUpperCase, trim, length,
** isEmpty, equals, contains, startsWith, endsWith, indexOf, charAt, substring, replace,
** replaceAll, split (then [k]), and UtilFunctions.splitRecodeEntry(s), Integer.valueOf,
** Integer.parseInt, Double.valueOf, Double.parseDouble, String.valueOf. Anything else is a
** located error naming what is not supported. An NA cell stays NA; results are STRING cells.
*/
#include <ctype.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "frame/frame.h"
#include "mem.h"

enum { MV_STR, MV_NUM, MV_BOOL, MV_ARR };
typedef struct MV { int t; const char *s; double n; char **arr; int narr; } MV;

/* Every string made while evaluating one cell, freed after it (or by a throw). */
typedef struct MapArena { void **p; int n, cap; } MapArena;

static void map_arena_clear(MapArena *a) {
  for (int i = 0; i < a->n; i++) mem_free(a->p[i]);
  a->n = 0;
}
static void map_arena_free(void *p) {
  MapArena *a = p;
  map_arena_clear(a);
  mem_free(a->p);
}
static void *map_arena_keep(MapArena *a, void *x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 16;
    a->p = mem_realloc(a->p, (size_t)a->cap * sizeof(void *));
  }
  a->p[a->n++] = x;
  return x;
}

typedef struct MP {
  Interp *I;
  const char *src, *p;
  char var[64];
  const char *cell;
  MapArena *ar;
} MP;

static l_noret mp_error(MP *m, const char *what) {
  bi_error(m->I, "%s at offset %d of \"%.80s\" (MLS's map takes the Java forms docs/frames.md lists)", what,
           (int)(m->p - m->src), m->src);
}

static void ws(MP *m) { while (isspace((unsigned char)*m->p)) m->p++; }
static bool eat(MP *m, const char *s) {
  ws(m);
  size_t n = strlen(s);
  if (strncmp(m->p, s, n) != 0) return false;
  m->p += n;
  return true;
}
static void expect(MP *m, const char *s) {
  if (!eat(m, s)) {
    char b[64];
    snprintf(b, sizeof b, "'%s' expected", s);
    mp_error(m, b);
  }
}

static char *mp_strdup(MP *m, const char *s, size_t n) { return map_arena_keep(m->ar, mem_strndup(s, n)); }

static const char *as_str(MP *m, MV v, char *buf) {
  if (v.t == MV_STR) return v.s;
  if (v.t == MV_BOOL) return v.n != 0 ? "true" : "false";
  if (v.t == MV_NUM) {
    if (v.n == floor(v.n) && fabs(v.n) < 1e15) snprintf(buf, 48, "%.0f", v.n);
    else fmt_num(buf, 48, v.n, 15);
    return buf;
  }
  mp_error(m, "a string expected, got an array");
}

static MV expr(MP *m);

static MV str_v(const char *s) { MV v = { MV_STR, s, 0, NULL, 0 }; return v; }
static MV num_v(double x) { MV v = { MV_NUM, NULL, x, NULL, 0 }; return v; }
static MV bool_v(bool b) { MV v = { MV_BOOL, NULL, b, NULL, 0 }; return v; }

/* A Java string literal: \\ \" \n \t; other escapes keep their backslash (regexes: \s, \d). */
static MV string_lit(MP *m) {
  const char *q = ++m->p;
  char *o = map_arena_keep(m->ar, mem_alloc(strlen(q) + 1)), *w = o;
  for (;;) {
    if (!*m->p) mp_error(m, "unterminated string");
    if (*m->p == '"') { m->p++; break; }
    if (*m->p == '\\' && m->p[1]) {
      char c = m->p[1];
      if (c == '"' || c == '\\') *w++ = c;
      else if (c == 'n') *w++ = '\n';
      else if (c == 't') *w++ = '\t';
      else { *w++ = '\\'; *w++ = c; }
      m->p += 2;
      continue;
    }
    *w++ = *m->p++;
  }
  *w = '\0';
  return str_v(o);
}

/* A Java regex as POSIX ERE: \s \d \w (inside brackets too), \. and the like as they are. */
static char *to_ere(MP *m, const char *re) {
  char *o = map_arena_keep(m->ar, mem_alloc(strlen(re) * 12 + 1)), *w = o;
  bool br = false;
  for (const char *p = re; *p; p++) {
    if (*p == '[' && !br) { br = true; *w++ = *p; continue; }
    if (*p == ']' && br) { br = false; *w++ = *p; continue; }
    if (*p == '\\' && p[1]) {
      const char *cls = p[1] == 's' ? "[:space:]" : p[1] == 'd' ? "[:digit:]" : p[1] == 'w' ? "[:alnum:]_" : NULL;
      if (cls) {
        if (!br) *w++ = '[';
        w += sprintf(w, "%s", cls);
        if (!br) *w++ = ']';
        p++;
        continue;
      }
      if (br) { *w++ = p[1]; p++; continue; }
    }
    *w++ = *p;
  }
  *w = '\0';
  return o;
}

/* s with every match of re replaced by rep (all), or split on re. */
static MV regex_op(MP *m, const char *s, const char *re, const char *rep, bool split) {
  regex_t rx;
  int rc = regcomp(&rx, to_ere(m, re), REG_EXTENDED);
  if (rc) mp_error(m, "a regular expression MLS cannot read");
  size_t cap = strlen(s) + 1, n = 0;
  char **parts = NULL;
  int np = 0;
  char *o = mem_alloc(cap);
  const char *p = s;
  regmatch_t mt;
  while (*p && regexec(&rx, p, 1, &mt, p == s ? 0 : REG_NOTBOL) == 0) {
    size_t a = (size_t)mt.rm_so, b = (size_t)mt.rm_eo;
    if (split) {
      parts = mem_realloc(parts, (size_t)(np + 1) * sizeof(char *));
      parts[np++] = mem_strndup(p, a);
    } else {
      size_t need = n + a + strlen(rep) + strlen(p) + 2;
      if (need > cap) { cap = need * 2; o = mem_realloc(o, cap); }
      memcpy(o + n, p, a);
      n += a;
      memcpy(o + n, rep, strlen(rep));
      n += strlen(rep);
    }
    if (b == 0) {                                  /* an empty match: step one byte */
      if (!split) o[n++] = *p;
      p++;
    } else p += b;
  }
  regfree(&rx);
  if (split) {
    mem_free(o);
    parts = mem_realloc(parts, (size_t)(np + 1) * sizeof(char *));
    parts[np++] = mem_strdup(p);
    while (np > 0 && !*parts[np - 1]) mem_free(parts[--np]);   /* Java drops trailing empties */
    map_arena_keep(m->ar, parts);
    for (int i = 0; i < np; i++) map_arena_keep(m->ar, parts[i]);
    MV v = { MV_ARR, NULL, 0, parts, np };
    return v;
  }
  size_t rest = strlen(p);
  if (n + rest + 1 > cap) o = mem_realloc(o, n + rest + 1);
  memcpy(o + n, p, rest + 1);
  return str_v(map_arena_keep(m->ar, o));
}

static MV plain_replace(MP *m, const char *s, const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), k = 0;
  if (!la) return str_v(s);
  for (const char *p = strstr(s, a); p; p = strstr(p + la, a)) k++;
  char *o = map_arena_keep(m->ar, mem_alloc(strlen(s) + k * lb + 1)), *w = o;
  for (const char *p = s;;) {
    const char *q = strstr(p, a);
    if (!q) { strcpy(w, p); break; }
    memcpy(w, p, (size_t)(q - p));
    w += q - p;
    memcpy(w, b, lb);
    w += lb;
    p = q + la;
  }
  return str_v(o);
}

static double num_arg(MP *m, MV v) {
  if (v.t == MV_NUM) return v.n;
  mp_error(m, "a number expected");
}

static MV call_args(MP *m, MV *args, int max, int *n) {
  expect(m, "(");
  *n = 0;
  ws(m);
  if (!eat(m, ")")) {
    for (;;) {
      if (*n >= max) mp_error(m, "too many arguments");
      args[(*n)++] = expr(m);
      if (eat(m, ")")) break;
      expect(m, ",");
    }
  }
  return args[0];
}

static double parse_java_num(MP *m, const char *s, bool integer) {
  char *e;
  double x = strtod(s, &e);
  if (e == s || *e || (integer && x != floor(x))) {
    char b[96];
    snprintf(b, sizeof b, "'%.40s' is not %s", s, integer ? "an integer" : "a number");
    mp_error(m, b);
  }
  return x;
}

static MV primary(MP *m) {
  ws(m);
  char buf[48];
  MV a[3];
  int n;
  if (*m->p == '"') return string_lit(m);
  if (isdigit((unsigned char)*m->p) || (*m->p == '-' && isdigit((unsigned char)m->p[1]))) {
    char *e;
    double x = strtod(m->p, &e);
    m->p = e;
    return num_v(x);
  }
  if (eat(m, "(")) {
    MV v = expr(m);
    expect(m, ")");
    return v;
  }
  if (eat(m, "UtilFunctions.splitRecodeEntry")) {
    call_args(m, a, 1, &n);
    const char *s = as_str(m, a[0], buf);
    const char *sep = NULL;
    for (const char *p = strstr(s, "\xc2\xb7"); p; p = strstr(p + 1, "\xc2\xb7")) sep = p;
    char **parts = map_arena_keep(m->ar, mem_alloc(2 * sizeof(char *)));
    parts[0] = mp_strdup(m, s, sep ? (size_t)(sep - s) : strlen(s));
    parts[1] = mp_strdup(m, sep ? sep + 2 : "", sep ? strlen(sep + 2) : 0);
    MV v = { MV_ARR, NULL, 0, parts, sep ? 2 : 1 };
    return v;
  }
  if (eat(m, "Integer.valueOf") || eat(m, "Integer.parseInt") || eat(m, "Long.parseLong")) {
    call_args(m, a, 1, &n);
    return num_v(a[0].t == MV_NUM ? trunc(a[0].n) : parse_java_num(m, as_str(m, a[0], buf), true));
  }
  if (eat(m, "Double.valueOf") || eat(m, "Double.parseDouble")) {
    call_args(m, a, 1, &n);
    return num_v(a[0].t == MV_NUM ? a[0].n : parse_java_num(m, as_str(m, a[0], buf), false));
  }
  if (eat(m, "String.valueOf")) {
    call_args(m, a, 1, &n);
    const char *s = as_str(m, a[0], buf);
    return str_v(mp_strdup(m, s, strlen(s)));
  }
  size_t vl = strlen(m->var);
  if (!strncmp(m->p, m->var, vl) && !isalnum((unsigned char)m->p[vl]) && m->p[vl] != '_') {
    m->p += vl;
    return str_v(m->cell);
  }
  mp_error(m, "an unsupported expression");
}

static MV postfix(MP *m) {
  MV v = primary(m);
  char buf[48], buf2[48];
  for (;;) {
    if (eat(m, "[")) {
      MV k = expr(m);
      expect(m, "]");
      if (v.t != MV_ARR) mp_error(m, "[k] of something that is not an array");
      double i = num_arg(m, k);
      if (!(i >= 0 && i < v.narr)) mp_error(m, "an array index out of bounds");
      v = str_v(v.arr[(int)i]);
      continue;
    }
    if (!eat(m, ".")) return v;
    ws(m);
    const char *nm = m->p;
    while (isalnum((unsigned char)*m->p) || *m->p == '_') m->p++;
    size_t ln = (size_t)(m->p - nm);
    MV a[3];
    int n;
    call_args(m, a, 3, &n);
    const char *s = as_str(m, v, buf);
#define IS(x) (ln == strlen(x) && !strncmp(nm, x, ln))
    if (IS("toLowerCase") || IS("toUpperCase")) {
      char *o = mp_strdup(m, s, strlen(s));
      for (char *p = o; *p; p++) *p = (char)(IS("toLowerCase") ? tolower((unsigned char)*p) : toupper((unsigned char)*p));
      v = str_v(o);
    } else if (IS("trim")) {
      while (*s && (unsigned char)*s <= ' ') s++;
      size_t k = strlen(s);
      while (k && (unsigned char)s[k - 1] <= ' ') k--;
      v = str_v(mp_strdup(m, s, k));
    } else if (IS("length")) {
      size_t k = 0;
      for (const char *p = s; *p; p++) k += ((unsigned char)*p & 0xC0) != 0x80;
      v = num_v((double)k);
    } else if (IS("isEmpty")) v = bool_v(!*s);
    else if (n == 1 && (IS("equals") || IS("contains") || IS("startsWith") || IS("endsWith") || IS("indexOf"))) {
      const char *t = as_str(m, a[0], buf2);
      size_t ls = strlen(s), lt = strlen(t);
      if (IS("equals")) v = bool_v(a[0].t == MV_STR && !strcmp(s, t));
      else if (IS("contains")) v = bool_v(strstr(s, t) != NULL);
      else if (IS("startsWith")) v = bool_v(!strncmp(s, t, lt));
      else if (IS("endsWith")) v = bool_v(lt <= ls && !strcmp(s + ls - lt, t));
      else { const char *q = strstr(s, t); v = num_v(q ? (double)(q - s) : -1); }
    } else if (IS("charAt") && n == 1) {
      double i = num_arg(m, a[0]);
      if (!(i >= 0 && i < (double)strlen(s))) mp_error(m, "charAt: index out of range");
      v = str_v(mp_strdup(m, s + (int64_t)i, 1));
    } else if (IS("substring") && n >= 1) {
      double i = num_arg(m, a[0]), j = n > 1 ? num_arg(m, a[1]) : (double)strlen(s);
      if (!(i >= 0 && i <= j && j <= (double)strlen(s))) mp_error(m, "substring: indices out of range");
      v = str_v(mp_strdup(m, s + (int64_t)i, (size_t)(j - i)));
    } else if (IS("replace") && n == 2) {
      char b3[48];
      v = plain_replace(m, s, as_str(m, a[0], buf2), as_str(m, a[1], b3));
    } else if (IS("replaceAll") && n == 2) {
      char b3[48];
      v = regex_op(m, s, as_str(m, a[0], buf2), as_str(m, a[1], b3), false);
    } else if (IS("split") && n == 1) {
      v = regex_op(m, s, as_str(m, a[0], buf2), "", true);
    } else {
      m->p = nm;
      mp_error(m, "an unsupported method");
    }
#undef IS
  }
}

static MV expr(MP *m) { return postfix(m); }

/* map(F, fn, margin=) */
Value bi_map(Interp *I, Args *a) {
  Value fv = ad_primal(a->v[0]);
  char d[64];
  if (fv.t != VT_FRAME) bi_argerror(I, 1, "frame expected, got %s", val_describe(fv, d, sizeof d));
  const FrameBlock *f = fv.u.fr;
  const char *fn = bi_str(I, a, 1);
  if (bi_given(a, 2) && bi_num(I, a, 2) != 0) bi_argerror(I, 3, "margin= (a row-wise lambda) is not supported by MLS");
  MP m = { I, fn, fn, "", NULL, NULL };
  ws(&m);
  const char *v = m.p;
  while (isalnum((unsigned char)*m.p) || *m.p == '_') m.p++;
  if (m.p == v || m.p - v >= (ptrdiff_t)sizeof m.var) mp_error(&m, "a lambda 'x -> expr' expected (one variable)");
  memcpy(m.var, v, (size_t)(m.p - v));
  m.var[m.p - v] = '\0';
  expect(&m, "->");
  const char *body = m.p;
  MapArena ar = { NULL, 0, 0 };
  mls_defer(I, map_arena_free, &ar);
  m.ar = &ar;
  int mark = I->ntmp;
  FrameBlock *g = frame_held(I, f->rows, f->ncol, NULL, a->span);
  char buf[48], out[48];
  for (int64_t c = 0; c < f->ncol; c++) {
    frame_set_name(I, g, c, f->cols[c].name, a->span);
    for (int64_t r = 0; r < f->rows; r++) {
      bi_poll(I, r, NULL);
      const char *s = frame_get_text(f, r, c, buf);
      if (!s) continue;                            /* NA stays NA */
      m.cell = s;
      m.p = body;
      MV res = expr(&m);
      ws(&m);
      if (*m.p) mp_error(&m, "unexpected text after the expression");
      frame_set_text(I, g, r, c, as_str(&m, res, out), a->span);
      map_arena_clear(&ar);
    }
  }
  Value rv = val_frame(g);
  val_retain(rv);
  tmp_release_to(I, mark);
  mls_undefer(I, &ar);
  map_arena_free(&ar);
  return rv;
}
