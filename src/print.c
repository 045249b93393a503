/*
** print.c — R's number formatting (formatReal): find the fewest significant digits (at most
** `digits`) that show each value, then pick fixed notation unless scientific is narrower.
*/
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "interp/interp.h"
#include "frame/frame.h"
#include "mem.h"
#include "print.h"
#include "progress.h"
#include <unistd.h>
#include "tensor.h"

/* A text buffer's block holds a Str header before the text, so that tb_take_str can hand the
** block over as the string itself (no copy of a long text). Every byte of it is counted
** against --max-memory (mem_charge), as the string is. */
#define TB_HDR offsetof(Str, s)

void tb_init(TextBuf *t) {
  size_t cap = 64;
  if (!mem_charge(TB_HDR + cap)) mem_oom(TB_HDR + cap);
  char *b = mem_try_alloc(TB_HDR + cap);
  if (!b) {
    mem_uncharge(TB_HDR + cap);
    mem_oom(TB_HDR + cap);
  }
  t->p = b + TB_HDR;
  t->cap = cap;
  t->n = 0;
  t->p[0] = '\0';
}

void tb_free(TextBuf *t) {
  if (!t->p) return;
  mem_free(t->p - TB_HDR);
  mem_uncharge(TB_HDR + t->cap);
  t->p = NULL;
}

static void tb_cleanup(void *t) { tb_free(t); }
void tb_open(Interp *I, TextBuf *t) { tb_init(t); mls_defer(I, tb_cleanup, t); }
void tb_close(Interp *I, TextBuf *t) { mls_undefer(I, t); tb_free(t); }

Value tb_take_str(TextBuf *t) {
  char *b = t->p - TB_HDR;
  size_t len = t->n;
  b = mem_shrink(b, STR_BYTES(len));
  mem_uncharge(t->cap - len - 1);             /* the string counts STR_BYTES(len), as val_str's */
  t->p = NULL;
  Str *s = (Str *)b;
  s->refcount = 1;
  s->len = len;
  Value v;
  v.t = VT_STR;
  v.u.s = s;
  return v;
}

Value tb_close_str(Interp *I, TextBuf *t) {
  mls_undefer(I, t);
  return tb_take_str(t);
}

void tb_putn(TextBuf *t, const char *s, size_t n) {
  if (t->n + n + 1 > t->cap) {
    if (n > SIZE_MAX / 4 - t->n) {                 /* (no machine holds that much) */
      tb_free(t);
      mem_oom(SIZE_MAX);
    }
    size_t cap = t->cap;
    while (t->n + n + 1 > cap) cap *= 2;
    if (!mem_charge(cap - t->cap)) {          /* near --max-memory: no room to double, just what is needed */
      cap = t->n + n + 1;
      if (!mem_charge(cap - t->cap)) {        /* the buffer goes before the error: a throw would lose it */
        tb_free(t);
        mem_oom(TB_HDR + cap);
      }
    }
    char *p = mem_try_realloc(t->p - TB_HDR, TB_HDR + cap);
    if (!p) {
      mem_uncharge(cap - t->cap);
      tb_free(t);
      mem_oom(TB_HDR + cap);
    }
    t->p = p + TB_HDR;
    t->cap = cap;
  }
  memcpy(t->p + t->n, s, n);
  t->n += n;
  t->p[t->n] = '\0';
}

void tb_puts(TextBuf *t, const char *s) { tb_putn(t, s, strlen(s)); }

/* (the formats here are short, fixed texts and numbers: a name or a user's string goes through
** tb_puts, since vsnprintf cannot give more than INT_MAX bytes) */
void tb_printf(TextBuf *t, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  MLS_ASSERT(k >= 0 && "tb_printf: an output over INT_MAX bytes (use tb_puts)");
  if (k < (int)sizeof buf) { tb_putn(t, buf, (size_t)k); return; }
  char *big = mem_try_alloc((size_t)k + 1);
  if (!big) {
    tb_free(t);
    mem_oom((size_t)k + 1);
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)k + 1, fmt, ap);
  va_end(ap);
  tb_putn(t, big, (size_t)k);
  mem_free(big);
}

/* Significant digits needed (<= digits) and decimal exponent of finite nonzero x. */
static void sig_exp(double x, int digits, int *nsig, int *e10) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", digits - 1, fabs(x));
  char *e = strchr(buf, 'e');
  *e10 = atoi(e + 1);
  int n = digits;
  const char *m = buf;                       /* "d.ddddd" */
  while (n > 1 && m[n] == '0') n--;          /* m[0] is the lead digit, m[1] the point */
  *nsig = n;
}


/* Common format for a set of values (R's formatReal). */
/* stop (may be NULL): polled every 2^16 values; once set the scan ends (the caller stops too). */
static NumFmt choose_fmt(const double *x, int64_t n, int64_t stride, int digits, const volatile sig_atomic_t *stop) {
  int mxsl = 1, rgt = 0, mxns = 1, mxe = 0, neg = 0, minexp = 0, maxexp = 0;
  bool any = false, naflag = false, na2 = false, inf = false, ninf = false;
  for (int64_t i = 0; i < n; i++) {
    if (stop && (i & 65535) == 65535 && *stop) break;
    double v = x[i * stride];
    if (isnan(v)) { if (mls_is_na(v)) na2 = true; else naflag = true; continue; }
    if (isinf(v)) { if (v < 0) ninf = true; else inf = true; continue; }
    int ns = 1, e = 0;
    if (v != 0) sig_exp(v, digits, &ns, &e);
    if (v < 0) neg = 1;
    int sleft = (e >= 0 ? e + 1 : 1) + (v < 0);
    int r = ns - e - 1;
    if (r < 0) r = 0;
    if (!any) { minexp = maxexp = e; }
    if (e < minexp) minexp = e;
    if (e > maxexp) maxexp = e;
    if (sleft > mxsl) mxsl = sleft;
    if (r > rgt) rgt = r;
    if (ns > mxns) mxns = ns;
    any = true;
  }
  (void)minexp;
  mxe = (abs(maxexp) >= 100 || abs(minexp) >= 100) ? 3 : 2;
  NumFmt f;
  f.rgt = rgt;
  int wf = mxsl + (f.rgt ? f.rgt + 1 : 0);
  int ws = neg + (mxns > 1 ? mxns + 1 : mxns) + 2 + mxe;
  f.sci = any && wf > ws;
  f.mant = mxns - 1;
  f.width = any ? (f.sci ? ws : wf) : 0;
  if (naflag && f.width < 3) f.width = 3;
  if (na2 && f.width < 2) f.width = 2;                 /* NA */
  if (inf && f.width < 3) f.width = 3;
  if (ninf && f.width < 4) f.width = 4;
  return f;
}

static int fmt_with(char *buf, size_t n, double x, const NumFmt *f) {
  if (isnan(x)) return snprintf(buf, n, mls_is_na(x) ? "NA" : "NaN");
  if (isinf(x)) return snprintf(buf, n, x < 0 ? "-Inf" : "Inf");
  if (f->sci) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*e", f->mant, x);
    char *e = strchr(tmp, 'e');                /* C gives e+05 / e-09 already, 2+ digits */
    return snprintf(buf, n, "%s", tmp) + (int)(e ? 0 : 0);
  }
  int k = snprintf(buf, n, "%.*f", f->rgt, x);
  if (strcmp(buf, "-0") == 0) return snprintf(buf, n, "0");
  return k;
}

NumFmt fmt_choose(const double *x, int64_t n, int64_t stride, int digits) { return choose_fmt(x, n, stride, digits, NULL); }
int fmt_apply(char *buf, size_t n, double x, const NumFmt *f) { return fmt_with(buf, n, x, f); }

void fmt_num(char *buf, size_t n, double x, int digits) {
  NumFmt f = choose_fmt(&x, 1, 1, digits, NULL);
  fmt_with(buf, n, x, &f);
}

int fmt_nums(const double *x, int64_t n, int digits, int nsmall, char *out, size_t each) {
  NumFmt f = choose_fmt(x, n, 1, digits, NULL);
  if (!f.sci && nsmall > f.rgt) f.rgt = nsmall;       /* R's format(nsmall=): fixed notation only */
  int w = 0;
  for (int64_t i = 0; i < n; i++) {
    int k = fmt_with(out + (size_t)i * each, each, x[i], &f);
    if (k > w) w = k;
  }
  return w;
}

static void pad_left(TextBuf *t, const char *s, int width) {
  int len = (int)strlen(s);
  for (int i = len; i < width; i++) tb_putn(t, " ", 1);
  tb_puts(t, s);
}

/* A sparse matrix's header line (docs/sparse.md): "[r x c sparse matrix, n nonzeros]". Not under
** --sparse always, the test mode, whose output is the dense run's. True when it was written. */
static bool sparse_header(Interp *I, TextBuf *t, const Tensor *m) {
  if (!tensor_is_sparse(m) || I->sparse_mode >= SPARSE_ALWAYS) return false;
  int64_t n = tensor_nnz(m);
  tb_printf(t, "[%lld x %lld sparse matrix, %lld nonzero%s]\n", (long long)tensor_rows(m), (long long)tensor_cols(m),
            (long long)n, n == 1 ? "" : "s");
  return true;
}

void fmt_matrix(Interp *I, TextBuf *t, const Tensor *m, int digits, bool elide, bool poll) {
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  if (r == 0 || c == 0) { tb_printf(t, "[%lld x %lld matrix]", (long long)r, (long long)c); return; }
  bool header = sparse_header(I, t, m);
  bool cut_r = elide && r > 20, cut_c = elide && c > 10;
  int64_t rshow[20], cshow[10];
  int nr = 0, nc = 0;
  for (int64_t i = 0; i < r && nr < 20; i++) {
    if (cut_r && i == 10) i = r - 10;
    rshow[nr++] = i;
  }
  for (int64_t j = 0; j < c && nc < 10; j++) {
    if (cut_c && j == 5) j = c - 5;
    cshow[nc++] = j;
  }
  int64_t ncols = elide ? nc : c;
  /* one scratch block, freed by a throw from the text buffer's growth (bi_scratch) */
  int64_t nrows = elide ? nr : r;
  double *col = bi_scratch(I, (size_t)nrows * sizeof(double) + (size_t)ncols * sizeof(NumFmt));
  NumFmt *fmts = (NumFmt *)(col + nrows);
  for (int64_t k = 0; k < ncols; k++) {
    int64_t j = elide ? cshow[k] : k;
    int64_t cnt = 0;
    for (int64_t q = 0; q < (elide ? nr : r); q++) col[cnt++] = tensor_cell(m, elide ? rshow[q] : q, j);
    fmts[k] = choose_fmt(col, cnt, 1, digits, poll ? &I->interrupted : NULL);
    if (poll && I->interrupted) goto done;           /* Ctrl-C: the caller raises it */
  }
  char buf[420];
  for (int64_t q = 0; q < nrows; q++) {
    if (poll && !elide && (q & 4095) == 4095 && I->interrupted) break;   /* Ctrl-C: the caller raises it */
    int64_t i = elide ? rshow[q] : q;
    if (cut_r && q == 10) tb_puts(t, "...\n");
    for (int64_t k = 0; k < ncols; k++) {
      int64_t j = elide ? cshow[k] : k;
      if (k) tb_puts(t, " ");
      if (cut_c && k == 5) tb_puts(t, "... ");
      fmt_with(buf, sizeof buf, tensor_cell(m, i, j), &fmts[k]);
      pad_left(t, buf, fmts[k].width);
    }
    if (q + 1 < nrows) tb_puts(t, "\n");
  }
  if ((cut_r || cut_c) && !header) tb_printf(t, "\n[%lld x %lld matrix]", (long long)r, (long long)c);
done:
  bi_scratch_free(I, col);
}

/*
** Which cells of a matrix a display `width` columns wide shows, as R prints it: "[,j]" over each
** column and "[i,]" before each row, each column right-aligned in its own format. Columns that
** do not fit are elided from the middle ("..." stands for them), keeping as many of the first
** and last as the width allows; more than 20 rows show the first and last 10. One scratch
** block (lf) holds the arrays, freed by a throw (mls_defer) or by layout_free.
*/
typedef struct MatLayout {
  int64_t rshow[20];             /* the rows shown */
  int nr, lab;                   /* their count; the width of the widest row label */
  bool cut_r, cut_c;             /* rows or columns elided */
  int64_t nl, nrt;               /* columns shown from the left and from the right */
  int64_t *left, *right;         /* their indices (right: from the last column inwards) */
  NumFmt *lf, *rf;               /* their formats */
  int *lw, *rw;                  /* their widths (with the "[,j]" label) */
} MatLayout;

static void layout_matrix(Interp *I, MatLayout *L, const Tensor *m, int digits, int width) {
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  L->cut_r = r > 20;
  L->nr = 0;
  for (int64_t i = 0; i < r && L->nr < 20; i++) {
    if (L->cut_r && i == 10) i = r - 10;
    L->rshow[L->nr++] = i;
  }
  int nr = L->nr;
  char buf[420];
  L->lab = snprintf(buf, sizeof buf, "[%lld,]", (long long)(L->rshow[nr - 1] + 1));
  /* columns taken from the left and from the right, alternately, while they fit */
  int64_t cap = c < 512 ? c : 512;               /* no terminal shows more */
  size_t nb = (size_t)cap;
  L->lf = mem_alloc(2 * nb * sizeof(NumFmt) + (size_t)nr * sizeof(double) + 2 * nb * sizeof(int64_t) + 2 * nb * sizeof(int));
  mls_defer(I, mem_free, L->lf);
  L->rf = L->lf + nb;
  double *col = (double *)(L->rf + nb);
  L->left = (int64_t *)(col + nr);
  L->right = L->left + nb;
  L->lw = (int *)(L->right + nb);
  L->rw = L->lw + nb;
  L->nl = L->nrt = 0;
  int used = L->lab;
  bool all = false;
  for (int64_t step = 0; L->nl + L->nrt < c && L->nl + L->nrt < cap; step++) {
    bool from_left = step % 2 == 0 || L->nl + L->nrt == c - 1;
    int64_t j = from_left ? L->nl : c - 1 - L->nrt;
    for (int q = 0; q < nr; q++) col[q] = tensor_cell(m, L->rshow[q], j);
    NumFmt f = choose_fmt(col, nr, 1, digits, NULL);
    int hw = snprintf(buf, sizeof buf, "[,%lld]", (long long)(j + 1));
    int w = f.width > hw ? f.width : hw;
    bool last = L->nl + L->nrt + 1 == c;
    int need = used + 1 + w + (last ? 0 : 4);  /* " ..." while columns remain hidden */
    if (need > width && L->nl + L->nrt > 0) break;
    used += 1 + w;
    if (from_left) { L->left[L->nl] = j; L->lf[L->nl] = f; L->lw[L->nl++] = w; }
    else { L->right[L->nrt] = j; L->rf[L->nrt] = f; L->rw[L->nrt++] = w; }
    if (last) all = true;
  }
  L->cut_c = !all;
}

static void layout_free(Interp *I, MatLayout *L) {
  mls_undefer(I, L->lf);
  mem_free(L->lf);
}

/* The s-th shown column of L, left to right: its index, format and width. */
static int64_t layout_col(const MatLayout *L, int64_t s, const NumFmt **f, int *w) {
  if (s < L->nl) { *f = &L->lf[s]; *w = L->lw[s]; return L->left[s]; }
  int64_t k = L->nrt - 1 - (s - L->nl);
  *f = &L->rf[k];
  *w = L->rw[k];
  return L->right[k];
}

/* A matrix at a terminal `width` columns wide (MatLayout); a "[r x c matrix]" line follows an
** elided matrix. */
static void fmt_matrix_tty(Interp *I, TextBuf *t, const Tensor *m, int digits, int width) {
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  if (r == 0 || c == 0) { tb_printf(t, "[%lld x %lld matrix]", (long long)r, (long long)c); return; }
  bool header = sparse_header(I, t, m);
  MatLayout L;
  layout_matrix(I, &L, m, digits, width);
  char buf[420];
  for (int pass = -1; pass < L.nr; pass++) {      /* -1: the header */
    if (pass >= 0 && L.cut_r && pass == 10) {
      tb_puts(t, "\n");
      for (int k = 0; k < L.lab; k++) tb_putn(t, " ", 1);
      tb_puts(t, " ...");
    }
    if (pass >= 0) tb_puts(t, "\n");
    if (pass >= 0) snprintf(buf, sizeof buf, "[%lld,]", (long long)(L.rshow[pass] + 1));   /* right-aligned, as R */
    else buf[0] = '\0';
    pad_left(t, buf, L.lab);
    for (int64_t s = 0; s < L.nl + L.nrt; s++) {
      const NumFmt *f;
      int w;
      int64_t j = layout_col(&L, s, &f, &w);
      if (s == L.nl && L.cut_c) tb_puts(t, " ...");
      tb_putn(t, " ", 1);
      if (pass < 0) snprintf(buf, sizeof buf, "[,%lld]", (long long)(j + 1));
      else fmt_with(buf, sizeof buf, tensor_cell(m, L.rshow[pass], j), f);
      pad_left(t, buf, w);
    }
    if (L.cut_c && L.nrt == 0) tb_puts(t, " ...");
  }
  if ((L.cut_r || L.cut_c) && !header) tb_printf(t, "\n[%lld x %lld matrix]", (long long)r, (long long)c);
  layout_free(I, &L);
}

void fmt_matrix_html(Interp *I, TextBuf *t, const Tensor *m, int digits, int width) {
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  if (r == 0 || c == 0) { tb_printf(t, "<pre>[%lld x %lld matrix]</pre>", (long long)r, (long long)c); return; }
  TextBuf h;
  tb_open(I, &h);
  bool header = sparse_header(I, &h, m);
  tb_puts(t, "<table class=\"mls-matrix\">\n");
  if (header) {                                    /* "[... sparse matrix, ...]\n" */
    if (h.n && h.p[h.n - 1] == '\n') h.p[--h.n] = '\0';
    tb_printf(t, "<caption>%s</caption>\n", h.p);
  }
  tb_close(I, &h);
  MatLayout L;
  layout_matrix(I, &L, m, digits, width);
  char buf[420];
  for (int pass = -1; pass < L.nr; pass++) {      /* -1: the header */
    if (pass == -1) tb_puts(t, "<thead>");
    if (pass == 0) tb_puts(t, "<tbody>\n");
    for (int dots = L.cut_r && pass == 10; dots >= 0; dots--) {   /* the "..." row, then row 10 */
      tb_puts(t, "<tr>");
      if (dots) tb_puts(t, "<th>...</th>");
      else if (pass < 0) tb_puts(t, "<th></th>");
      else tb_printf(t, "<th>[%lld,]</th>", (long long)(L.rshow[pass] + 1));
      const char *cell = pass < 0 ? "th" : "td";
      for (int64_t s = 0; s < L.nl + L.nrt; s++) {
        const NumFmt *f;
        int w;
        int64_t j = layout_col(&L, s, &f, &w);
        if (s == L.nl && L.cut_c) tb_printf(t, "<%s>...</%s>", cell, cell);
        if (dots) { tb_puts(t, "<td></td>"); continue; }
        if (pass < 0) snprintf(buf, sizeof buf, "[,%lld]", (long long)(j + 1));
        else {
          fmt_with(buf, sizeof buf, tensor_cell(m, L.rshow[pass], j), f);
          char *b = buf;
          while (*b == ' ') b++;
          memmove(buf, b, strlen(b) + 1);
        }
        tb_printf(t, "<%s>%s</%s>", cell, buf, cell);
      }
      if (L.cut_c && L.nrt == 0) tb_printf(t, "<%s>...</%s>", cell, cell);
      tb_puts(t, "</tr>");
      if (pass < 0) tb_puts(t, "</thead>");
      tb_puts(t, "\n");
    }
  }
  tb_puts(t, "</tbody>\n</table>");
  if ((L.cut_r || L.cut_c) && !header) tb_printf(t, "\n<p>[%lld x %lld matrix]</p>", (long long)r, (long long)c);
  layout_free(I, &L);
}

/* The terminal's width when display goes to one (I->out is a terminal), else 0. */
static int display_width(Interp *I) {
  if (!I || !I->out) return 0;
  int fd = fileno(I->out);
  if (fd < 0 || !isatty(fd)) return 0;
  return term_columns(fd);
}

static void fmt_function(TextBuf *t, Value v) {
  if (v.t == VT_BUILTIN) { tb_printf(t, "builtin %s", v.u.bi->sig); return; }
  if (v.u.f->derived) { tb_printf(t, "%s(...)", v.u.f->dname); return; }
  const FuncInfo *fi = v.u.f->fi;
  const Source *s = v.u.f->chunk->src;
  Span sp = fi->body ? span_join(fi->span, fi->body->span) : fi->span;
  tb_putn(t, s->text + sp.start, sp.end - sp.start);
}

/* summary()'s result as R prints a summaryDefault: zapsmall (7 digits) and 4 significant digits, formatted in common
** (a count of NaN's apart), names over values, every column as wide as the widest. */
static void fmt_table(TextBuf *t, const List *l) {
  int n = l->n > 8 ? 8 : l->n;
  int k = n;
  if (k > 0 && l->names && l->names[k - 1] && !strcmp(l->names[k - 1]->name, "NA's")) k--;
  double x[8], mx = 0;
  for (int i = 0; i < n; i++) {
    Value v = ad_primal(l->items[i]);
    x[i] = v.t == VT_NUM ? v.u.n : NAN;
    if (i < k && isfinite(x[i]) && fabs(x[i]) > mx) mx = fabs(x[i]);
  }
  int dg = 4;
  int rd = mx > 0 ? (int)floor(7 - log10(mx) + 0.5) : 7;  /* zapsmall(x): round(x, 7 - log10(max)) */
  if (rd < 0) rd = 0;
  if (rd > 300) rd = 300;
  for (int i = 0; i < k; i++)
    if (isfinite(x[i])) { double p = pow(10.0, rd); x[i] = nearbyint(x[i] * p) / p; }
  char txt[8][64];
  fmt_nums(x, k, dg, 0, &txt[0][0], 64);
  for (int i = k; i < n; i++) snprintf(txt[i], 64, "%.0f", x[i]);
  int w = 0;
  for (int i = 0; i < n; i++) {
    int a = (int)strlen(txt[i]), b = l->names && l->names[i] ? (int)strlen(l->names[i]->name) : 0;
    if (a > w) w = a;
    if (b > w) w = b;
  }
  for (int i = 0; i < n; i++) tb_printf(t, "%s%*s", i ? " " : "", w, l->names && l->names[i] ? l->names[i]->name : "");
  tb_puts(t, "\n");
  for (int i = 0; i < n; i++) tb_printf(t, "%s%*s", i ? " " : "", w, txt[i]);
}

/* A vector with names, as R prints one: the names over the values, every column as wide as the
** widest name or value, as many columns a line as fit in 80 characters (without R's trailing
** space at each line's end). */
static void fmt_named(Interp *I, TextBuf *t, const Tensor *m, int digits) {
  int64_t n = tensor_numel(m);
  const TensorNames *nm = m->names;
  double *x = bi_scratch(I, (size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) x[i] = tensor_at(m, i);
  NumFmt f = choose_fmt(x, n, 1, digits, NULL);
  char buf[420];
  int w = 0;
  for (int64_t i = 0; i < n; i++) {
    int k = m->logical ? (isnan(x[i]) ? 2 : x[i] != 0 ? 4 : 5) : fmt_with(buf, sizeof buf, x[i], &f);
    int b = (int)strlen(nm->s[i]);
    if (k > w) w = k;
    if (b > w) w = b;
  }
  int64_t per = 80 / (w + 1);
  if (per < 1) per = 1;
  for (int64_t i0 = 0; i0 < n; i0 += per) {
    int64_t i1 = i0 + per < n ? i0 + per : n;
    if (i0) tb_puts(t, "\n");
    for (int64_t i = i0; i < i1; i++) tb_printf(t, "%s%*s", i > i0 ? " " : "", w, nm->s[i]);
    tb_puts(t, "\n");
    for (int64_t i = i0; i < i1; i++) {
      if (m->logical) snprintf(buf, sizeof buf, "%s", isnan(x[i]) ? "NA" : x[i] != 0 ? "TRUE" : "FALSE");
      else fmt_with(buf, sizeof buf, x[i], &f);
      tb_printf(t, "%s%*s", i > i0 ? " " : "", w, buf);
    }
  }
  bi_scratch_free(I, x);
}

static void fmt_list(Interp *I, TextBuf *t, const List *l, int digits, bool quote, const char *prefix) {
  if (l->n == 0) { tb_puts(t, "list()"); return; }
  if (l->table && !*prefix) { fmt_table(t, l); return; }
  if (l->timing && l->n == 3 && !*prefix) {       /* system.time's result, as R prints it */
    tb_puts(t, "   user  system elapsed");
    for (int i = 0; i < 3; i++) tb_printf(t, i ? " %7.3f" : "\n%7.3f", ad_primal(l->items[i]).t == VT_NUM ? ad_primal(l->items[i]).u.n : NAN);
    return;
  }
  for (int i = 0; i < l->n; i++) {
    TextBuf head;
    tb_open(I, &head);
    tb_puts(&head, prefix);
    if (l->names && l->names[i]) { tb_puts(&head, "$"); tb_puts(&head, l->names[i]->name); }
    else tb_printf(&head, "[[%d]]", i + 1);
    if (i) tb_puts(t, "\n\n");
    Value v = l->items[i];
    if (v.t == VT_LIST && v.u.l->n > 0) {
      fmt_list(I, t, v.u.l, digits, quote, head.p);
    } else {
      tb_puts(t, head.p);
      tb_puts(t, "\n");
      fmt_display(I, t, v, digits, quote);
    }
    tb_close(I, &head);
  }
}

void fmt_display(Interp *I, TextBuf *t, Value v, int digits, bool quote) {
  char buf[400];
  v = ad_primal(v);
  switch (v.t) {
  case VT_NULL: tb_puts(t, "NULL"); break;
  case VT_NUM: fmt_num(buf, sizeof buf, v.u.n, digits); tb_puts(t, buf); break;
  case VT_BOOL: tb_puts(t, v.u.b ? "TRUE" : "FALSE"); break;
  case VT_STR:
    if (!quote) { tb_putn(t, v.u.s->s, v.u.s->len); break; }
    tb_putn(t, "\"", 1);
    for (size_t i = 0; i < v.u.s->len; i++) {
      char c = v.u.s->s[i];
      if (c == '\n') tb_puts(t, "\\n");
      else if (c == '\t') tb_puts(t, "\\t");
      else if (c == '"') tb_puts(t, "\\\"");
      else if (c == '\\') tb_puts(t, "\\\\");
      else tb_putn(t, &c, 1);
    }
    tb_putn(t, "\"", 1);
    break;
  case VT_MAT: {
    int w = display_width(I);
    if (v.u.m->names && v.u.m->names->n == tensor_numel(v.u.m) && tensor_numel(v.u.m) > 0 &&
        (tensor_rows(v.u.m) == 1 || tensor_cols(v.u.m) == 1)) fmt_named(I, t, v.u.m, digits);
    else if (w > 0) fmt_matrix_tty(I, t, v.u.m, digits, w);
    else fmt_matrix(I, t, v.u.m, digits, true, false);
    break;
  }
  case VT_LIST: fmt_list(I, t, v.u.l, digits, quote, ""); break;
  case VT_FRAME: frame_format(I, t, v.u.fr, digits, true); break;
  case VT_FUNC: case VT_BUILTIN: fmt_function(t, v); break;
  default: tb_puts(t, "<unbound>"); break;
  }
}

void fmt_value_text(Interp *I, TextBuf *t, Value v, Span sp) {
  char buf[400];
  v = ad_primal(v);
  switch (v.t) {
  case VT_NUM: fmt_num(buf, sizeof buf, v.u.n, 15); tb_puts(t, buf); break;
  case VT_STR: tb_putn(t, v.u.s->s, v.u.s->len); break;
  case VT_MAT: fmt_matrix(I, t, v.u.m, 15, false, true); break;
  case VT_FRAME: frame_format(I, t, v.u.fr, 7, false); break;
  case VT_LIST:
    for (int i = 0; i < v.u.l->n; i++) {
      if (i) tb_puts(t, ", ");
      fmt_value_text(I, t, v.u.l->items[i], sp);
    }
    break;
  default: fmt_display(I, t, v, 15, false); break;
  }
}
