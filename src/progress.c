/*
** progress.c — the for-loop progress bar (progress.h) and the terminal's width, which the
** bar and the display of matrices (print.c) both fit.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "progress.h"

int term_columns(int fd) {
  struct winsize ws;                 /* the terminal's own size first: it follows a resize */
  if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 10) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  if (c && *c) {
    int n = atoi(c);
    if (n >= 10 && n <= 10000) return n;
  }
  return 80;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_clear(FILE *f, bool *open) {
  if (!*open) return;
  fputs("\r\x1b[K", f);
  fflush(f);
  *open = false;
}

static bool progress_off(void) {
  const char *env = getenv("MLS_PROGRESS");
  return env && strcmp(env, "0") == 0;
}

void progress_start_shown(Progress *p, ProgressShow show, void *ctx, int64_t total) {
  memset(p, 0, sizeof *p);
  p->show = show;
  p->ctx = ctx;
  p->on = show && total > 0 && !progress_off();
  p->fd = -1;
  p->total = total;
  p->t0 = now_s();
  p->last = -1;
  p->drawn = -1;
  if (p->on) progress_step(p, 0);
}

void progress_start(Progress *p, FILE *f, int64_t total, bool *open) {
  memset(p, 0, sizeof *p);
  p->open = open;
  p->fd = f ? fileno(f) : -1;
  p->on = f && p->fd >= 0 && isatty(p->fd) && total > 0 && !progress_off();
  p->f = f;
  p->total = total;
  p->t0 = now_s();
  p->last = -1;
  p->drawn = -1;
  if (p->on) progress_step(p, 0);
}

static void fmt_time(char *buf, size_t n, double s) {
  if (!(s >= 0) || s > 359999) { snprintf(buf, n, "--:--"); return; }
  long t = (long)(s + 0.5);
  if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else snprintf(buf, n, "%02ld:%02ld", t / 60, t % 60);
}

void progress_step(Progress *p, int64_t done) {
  if (!p->on) return;
  p->at = done;
  double t = now_s();
  bool shown = p->show ? p->drawn >= 0 : *p->open;
  if (done < p->total && p->last >= 0 && t - p->last < 0.1 && shown) return;
  p->last = t;
  double el = t - p->t0, frac = (double)done / (double)p->total;
  char e[32], r[32], tail[128];
  fmt_time(e, sizeof e, el);
  fmt_time(r, sizeof r, done > 0 ? el / frac - el : -1);
  snprintf(tail, sizeof tail, " %lld/%lld %3d%% %s<%s", (long long)done, (long long)p->total,
           (int)(frac * 100), e, r);
  if (p->show) {                                   /* a fixed 40-column bar, shown by the front end */
    char line[192];
    int fill = (int)(frac * 40);
    line[0] = '[';
    for (int i = 0; i < 40; i++) line[1 + i] = i < fill ? '=' : i == fill ? '>' : ' ';
    snprintf(line + 41, sizeof line - 41, "]%s", tail);
    p->show(p->ctx, p->drawn < 0 ? 0 : 1, done, p->total, line);
    p->drawn = done;
    return;
  }
  int cols = term_columns(p->fd) - 1;              /* the last column would wrap on some terminals */
  int bar = cols - (int)strlen(tail) - 2;
  if (bar > 60) bar = 60;
  fputc('\r', p->f);
  if (bar >= 5) {
    int fill = (int)(frac * bar);
    fputc('[', p->f);
    for (int i = 0; i < bar; i++) fputc(i < fill ? '=' : i == fill ? '>' : ' ', p->f);
    fputc(']', p->f);
  }
  fputs(tail, p->f);
  fputs("\x1b[K", p->f);                            /* clear what a longer line left */
  fflush(p->f);
  *p->open = true;
}

void progress_end(Progress *p) {
  if (!p->on) return;
  if (p->show) {                                   /* the step the loop ended at (a break) */
    if (p->drawn != p->at) { p->last = -1; progress_step(p, p->at); }
    p->on = false;
    return;
  }
  if (!*p->open) progress_step(p, p->total);      /* print() erased it: show the end state */
  fputc('\n', p->f);
  fflush(p->f);
  *p->open = false;
  p->on = false;
}
