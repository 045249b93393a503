/*
** suggest.c — "did you mean 'rowSums'?" for a name that is not found (issue 13): the names in
** scope (locals of the running functions, globals), the builtins and the stdlib's builtins
** written in MLS, nearest first by edit distance with transpositions (lenght -> length costs
** 1); and, for a word of R that MLS spells otherwise, that spelling (chol -> cholesky).
*/
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtins.h"
#include "interp/interp.h"
#include "mem.h"

#define MAX_SUGGEST 3

typedef struct Near { const char *name[MAX_SUGGEST]; char own[MAX_SUGGEST][64]; int dist[MAX_SUGGEST]; int n; int limit; const char *want; } Near;

/* Edit distance with adjacent transpositions (the optimal string alignment distance: insert,
** delete, substitute and swap two neighbours, 1 each), or limit + 1 once it exceeds limit. */
static int edit_distance(const char *a, const char *b, int limit) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 60 || lb > 60 || la - lb > limit || lb - la > limit) return limit + 1;
  int d[3][61], *pp = d[0], *p = d[1], *c = d[2];   /* rows i-2, i-1, i */
  for (int j = 0; j <= lb; j++) p[j] = j;
  for (int i = 1; i <= la; i++) {
    c[0] = i;
    int best = i;
    for (int j = 1; j <= lb; j++) {
      int v = p[j - 1] + (a[i - 1] != b[j - 1]);
      if (p[j] + 1 < v) v = p[j] + 1;
      if (c[j - 1] + 1 < v) v = c[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v) v = pp[j - 2] + 1;
      c[j] = v;
      if (v < best) best = v;
    }
    if (best > limit) return limit + 1;
    int *t = pp;
    pp = p;
    p = c;
    c = t;
  }
  return p[lb];
}

/* Words of R that MLS spells otherwise (docs/language.md §16): the MLS name, or what to write. */
static const struct { const char *r, *mls; bool name; } r_words[] = {
  { "chol", "cholesky", true },          { "chol2inv", "inv", true },
  { "numeric", "matrix(0, n, 1)", false }, { "vector", "matrix(0, n, 1) or list()", false },
  { "integer", "matrix(0, n, 1)", false }, { "double", "matrix(0, n, 1)", false },
  { "array", "matrix (MLS matrices have two dimensions)", false },
  { "as.numeric", "as.double", true },   { "as.vector", "matrix(x, length(x), 1)", false },
  { "library", "source(\"file\") as name", false }, { "require", "source(\"file\") as name", false },
  { "Sys.time", "time", true },          { "proc.time", "time", true },
  { "message", "cat", true },            { "readRDS", "load", true }, { "saveRDS", "save", true },
  { "read.table", "read(file, format = \"csv\")", false },
  { "write.table", "write(X, file, format = \"csv\")", false },
  { "colnames", "names of a list (MLS matrices have no dimnames)", false },
  { "rownames", "names of a list (MLS matrices have no dimnames)", false },
  { "norm", "sqrt(sum(x^2))", false },   { "nlevels", "length(unique(x))", false },
  { "optim", "grad and a loop (examples/)", false },
};

/* The hint for R's word name ("" when MLS has no other spelling of it). */
static void r_word(const char *name, char *out, size_t n) {
  for (size_t i = 0; i < sizeof r_words / sizeof r_words[0]; i++)
    if (!strcmp(r_words[i].r, name)) {
      if (r_words[i].name) snprintf(out, n, "; did you mean '%s' (R's %s)?", r_words[i].mls, name);
      else snprintf(out, n, "; in MLS: %s", r_words[i].mls);
      return;
    }
}

static void consider(Near *nr, const char *name) {
  if (strcmp(name, nr->want) == 0) return;
  int d = edit_distance(nr->want, name, nr->limit);
  if (d > nr->limit) return;
  for (int i = 0; i < nr->n; i++) if (strcmp(nr->name[i], name) == 0) return;
  int pos = nr->n;
  while (pos > 0 && (nr->dist[pos - 1] > d || (nr->dist[pos - 1] == d && strcmp(nr->name[pos - 1], name) > 0))) pos--;
  if (pos >= MAX_SUGGEST) return;
  int last = nr->n < MAX_SUGGEST ? nr->n : MAX_SUGGEST - 1;
  for (int i = last; i > pos; i--) {
    nr->dist[i] = nr->dist[i - 1];
    memcpy(nr->own[i], nr->own[i - 1], sizeof nr->own[i]);
    nr->name[i] = nr->own[i];
  }
  nr->dist[pos] = d;
  snprintf(nr->own[pos], sizeof nr->own[pos], "%s", name);
  nr->name[pos] = nr->own[pos];
  if (nr->n < MAX_SUGGEST) nr->n++;
}

static int mls_file(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return n > 4 && strcmp(e->d_name + n - 4, ".mls") == 0 && e->d_name[0] != '.';
}

static int dml_file(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return n > 4 && strcmp(e->d_name + n - 4, ".dml") == 0 && e->d_name[0] != '.';
}

/* Considers the builtins that are files NAME.ext of dir (ext: 4 characters with the dot). */
static void consider_files(Near *nr, const char *dir, int (*filter)(const struct dirent *)) {
  struct dirent **names;
  int k = scandir(dir, &names, filter, alphasort);
  for (int i = 0; i < k; i++) {
    names[i]->d_name[strlen(names[i]->d_name) - 4] = '\0';
    consider(nr, names[i]->d_name);
    free(names[i]);
  }
  if (k > 0) free(names);
}

void interp_suggest(Interp *I, const char *name, char *out, size_t n) {
  Near nr;
  memset(&nr, 0, sizeof nr);
  nr.want = name;
  int len = (int)strlen(name);
  nr.limit = len <= 2 ? 0 : len <= 5 ? 1 : len <= 9 ? 2 : 3;    /* about a third of the name */
  out[0] = '\0';
  r_word(name, out, n);
  if (out[0]) return;
  if (nr.limit == 0) return;
  for (Env *e = I->env; e; e = e->parent)
    for (int i = 0; i < e->n; i++)
      if (e->slots[i].t != VT_UNBOUND && e->fi->slots[i]) consider(&nr, e->fi->slots[i]->name);
  for (uint32_t b = 0; b < I->syms.nbuckets; b++)
    for (Symbol *s = I->syms.buckets[b]; s; s = s->next)
      if ((s->global.t != VT_UNBOUND || s->bi) && !sym_is_namespace(s)) consider(&nr, s->name);
  char buf[PATH_MAX], dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/builtin", interp_stdlib_dir(I, buf, sizeof buf));
  consider_files(&nr, dir, mls_file);
  if (interp_dml_builtins_dir(I)) consider_files(&nr, interp_dml_builtins_dir(I), dml_file);
  if (nr.n == 0) return;
  while (nr.n > 1 && nr.dist[nr.n - 1] > nr.dist[0]) nr.n--;      /* only the nearest */
  size_t w = (size_t)snprintf(out, n, "; did you mean ");
  for (int i = 0; i < nr.n && w < n; i++)
    w += (size_t)snprintf(out + w, n - w, "%s'%s'", i == 0 ? "" : i == nr.n - 1 ? " or " : ", ", nr.name[i]);
  if (w < n) snprintf(out + w, n - w, "?");
}
