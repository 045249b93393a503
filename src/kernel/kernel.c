/*
** kernel.c — the Jupyter kernel: sockets and threads (heartbeat echo, control), and the shell
** requests (execute, complete, inspect, is_complete, kernel_info, shutdown) run on one Interp.
*/
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>
#include "autodiff.h"
#include "builtins.h"
#include "kernel/kernel.h"
#include "kernel/wire.h"
#include "mem.h"
#include "parse.h"
#include "plot/plot.h"
#include "print.h"
#include "progress.h"

/* grep ORDER KEYWORD: the reserved words of grammar/lexer.re, for completion. */
static const char *const keywords[] = {
  "if", "else", "while", "for", "parfor", "in", "function", "return", "break", "next",
  "repeat", "TRUE", "FALSE", "Inf", "NaN", "NA", "NULL", NULL
};

/* One of the kernel's output streams (I->out, I->stderr_to): its writes become iopub "stream"
** messages of that name. */
typedef struct Sink {
  struct Kernel *K;
  const char *name;               /* "stdout" or "stderr" */
  char carry[4];                  /* an incomplete UTF-8 sequence at the end of a write */
  size_t ncarry;
} Sink;

struct Kernel {
  Interp *I;
  KernelOptions opt;
  Wire wire;
  void *ctx, *shell, *control, *stdin_sock, *iopub, *hb;
  pthread_t hb_thread, control_thread;
  bool hb_started, control_started;
  pthread_mutex_t iopub_lock;     /* iopub is written by the shell and the control threads */
  atomic_int shutdown;            /* a shutdown was asked (control thread, signal, quit()) */
  atomic_int orphaned;            /* the parent process is gone: exit status 1 */
  int count;                      /* execution_count */
  const WireMsg *cur;             /* the request being answered: parent of what is published */
  bool silent;                    /* its content.silent: publish no output */
  FILE *out, *err;                /* I->out and I->stderr_to while serving: stream messages */
  Sink sout, serr;
  char *pending;                  /* the last echoed value, not yet sent (the cell's result) */
  size_t npending;
  char *pending_html;             /* its HTML form (a matrix's table), or NULL */
  int ndisplay;                   /* display_ids handed out (progress bars) */
  char progress_id[64];           /* the display_id of the bar being drawn */
  pid_t parent;                   /* the process whose end ends the kernel (JPY_PARENT_PID, else the
                                  ** parent at start; 0: none), polled by the control thread */
  pid_t ppid0;                    /* getppid() at start */
  FILE *saved_out, *saved_stderr_to;
  void (*saved_echo)(Interp *, Value, const char *, size_t, void *);
  void (*saved_display)(Interp *, const char *, const unsigned char *, size_t, void *);
  void (*saved_display_value)(Interp *, Value, const char *, size_t, void *);
  void (*saved_progress)(void *, int, int64_t, int64_t, const char *);
  void *saved_ctx;
};

/* The only static state: the signal handler takes no user pointer. Set while a kernel is open. */
static Kernel *g_kernel;

/* SIGINT interrupts the running cell (the interpreter polls the flag); SIGTERM also ends the
** kernel. Both only store flags, which is async-signal-safe. */
static void on_signal(int sig) {
  Kernel *K = g_kernel;
  if (!K) return;
  if (sig == SIGTERM) atomic_store(&K->shutdown, 1);
  K->I->interrupted = sig == SIGTERM ? SIGTERM : 1;
}

/* ---- publishing on iopub ---- */
static void publish(Kernel *K, const WireMsg *parent, const char *type, json_t *content) {
  pthread_mutex_lock(&K->iopub_lock);
  char topic[128];
  snprintf(topic, sizeof topic, "kernel.%s.%s", K->wire.session, type);
  if (wire_send(&K->wire, K->iopub, parent, topic, type, content) != 0)
    fprintf(stderr, "mls kernel: cannot publish %s: %s\n", type, zmq_strerror(zmq_errno()));
  pthread_mutex_unlock(&K->iopub_lock);
}

static void publish_status(Kernel *K, const WireMsg *parent, const char *state) {
  publish(K, parent, "status", json_pack("{s:s}", "execution_state", state));
}

static void stream(Kernel *K, const char *name, const char *text, size_t n) {
  if (n == 0 || K->silent) return;
  publish(K, K->cur, "stream", json_pack("{s:s, s:o}", "name", name, "text", wire_text(text, n)));
}

/* A value echoed earlier is not the cell's result once more output follows: send it as output. */
static void flush_pending(Kernel *K) {
  if (!K->pending) return;
  char *p = K->pending;
  size_t n = K->npending;
  K->pending = NULL;
  free(K->pending_html);
  K->pending_html = NULL;
  p[n] = '\n';
  stream(K, "stdout", p, n + 1);
  free(p);
}

/* Bytes at the end of s that start a UTF-8 sequence longer than what is left. */
static size_t incomplete_tail(const char *s, size_t n) {
  for (size_t k = 1; k <= 3 && k <= n; k++) {
    unsigned char c = (unsigned char)s[n - k];
    if ((c & 0xc0) == 0x80) continue;          /* a continuation byte: look further back */
    size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return need > k ? k : 0;
  }
  return 0;
}

/* The write function of I->out and I->stderr_to (fopencookie, line buffered): each line goes
** out as it is printed, as a stream message of the sink's name. */
static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
  Sink *s = cookie;
  Kernel *K = s->K;
  flush_pending(K);
  size_t total = s->ncarry + n;
  char *b = malloc(total);
  if (!b) return (ssize_t)n;
  memcpy(b, s->carry, s->ncarry);
  memcpy(b + s->ncarry, buf, n);
  size_t keep = incomplete_tail(b, total);
  stream(K, s->name, b, total - keep);
  memcpy(s->carry, b + total - keep, keep);
  s->ncarry = keep;
  free(b);
  return (ssize_t)n;
}

/* The HTML form of v (malloc'ed), or NULL: a matrix's table (print.h fmt_matrix_html, as wide as
** a terminal of $COLUMNS or 80 columns shows it). */
static char *html_of(Interp *I, Value v) {
  v = ad_primal(v);
  if (v.t != VT_MAT) return NULL;
  TextBuf t;
  tb_open(I, &t);
  fmt_matrix_html(I, &t, v.u.m, I->print_digits, term_columns(-1));
  char *h = strdup(t.p);
  tb_close(I, &t);
  return h;
}

/* I->echo: holds the value; the last one left when the cell ends is its execute_result. */
static void on_echo(Interp *I, Value v, const char *text, size_t len, void *ctx) {
  Kernel *K = ctx;
  fflush(I->out);                   /* output printed before it goes first */
  fflush(K->err);
  flush_pending(K);
  char *html = K->silent ? NULL : html_of(I, v);
  K->pending = malloc(len + 2);
  if (!K->pending) { free(html); return; }
  memcpy(K->pending, text, len);
  K->pending[len] = '\0';
  K->npending = len;
  K->pending_html = html;
}

/* A mime bundle: text/plain, and text/html when html is not NULL. */
static json_t *bundle(const char *text, size_t len, const char *html) {
  json_t *d = json_pack("{s:o}", "text/plain", wire_text(text, len));
  if (html) json_object_set_new(d, "text/html", wire_text(html, strlen(html)));
  return d;
}

/* I->display_value (display(x)): display_data with the value's text and HTML forms. */
static void on_display_value(Interp *I, Value v, const char *text, size_t len, void *ctx) {
  Kernel *K = ctx;
  fflush(I->out);
  fflush(K->err);
  flush_pending(K);
  if (K->silent) return;
  char *html = html_of(I, v);
  publish(K, K->cur, "display_data",
          json_pack("{s:o, s:{}, s:{}}", "data", bundle(text, len, html), "metadata", "transient"));
  free(html);
}

/* I->progress: a loop's bar as display_data with a new display_id (phase 0), then
** update_display_data of that id, which the notebook redraws in place. */
static void on_progress(void *ctx, int phase, int64_t done, int64_t total, const char *text) {
  Kernel *K = ctx;
  if (K->silent) return;
  if (phase == 0) {
    fflush(K->I->out);
    fflush(K->err);
    flush_pending(K);
    snprintf(K->progress_id, sizeof K->progress_id, "mls-progress-%.32s-%d", K->wire.session, ++K->ndisplay);
  }
  char tail[192], html[400];
  size_t n = 0;
  for (const char *p = strchr(text, ']') ? strchr(text, ']') + 1 : text; *p && n + 5 < sizeof tail; p++) {
    if (*p == '<') { memcpy(tail + n, "&lt;", 4); n += 4; }      /* "elapsed<remaining" */
    else tail[n++] = *p;
  }
  tail[n] = '\0';
  snprintf(html, sizeof html, "<progress value=\"%lld\" max=\"%lld\" style=\"width:30em\"></progress> <code>%s</code>",
           (long long)done, (long long)total, tail);
  publish(K, K->cur, phase == 0 ? "display_data" : "update_display_data",
          json_pack("{s:o, s:{}, s:{s:s}}", "data", bundle(text, strlen(text), html), "metadata", "transient",
                    "display_id", K->progress_id));
}

/* I->display: rich output (plots) as display_data; binary types are sent base64-encoded. */
static void on_display(Interp *I, const char *mime, const unsigned char *data, size_t len, void *ctx) {
  Kernel *K = ctx;
  fflush(I->out);
  fflush(K->err);
  if (K->silent) return;
  bool text = !strncmp(mime, "text/", 5) || strstr(mime, "+xml") || strstr(mime, "json");
  json_t *v;
  if (text) {
    v = wire_text((const char *)data, len);
  } else {
    char *b64 = wire_base64(data, len);
    if (!b64) return;
    v = json_string(b64);
    free(b64);
  }
  json_t *d = json_object();
  json_object_set_new(d, mime, v);
  publish(K, K->cur, "display_data", json_pack("{s:o, s:{}, s:{}}", "data", d, "metadata", "transient"));
}

/* ---- requests ---- */
static json_t *kernel_info(void) {
  return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s}, s:s, s:[]}",
                   "status", "ok", "protocol_version", WIRE_PROTOCOL_VERSION, "implementation", "mls",
                   "implementation_version", MLS_VERSION,
                   "language_info", "name", "mls", "version", MLS_VERSION, "mimetype", "text/x-mls",
                   "file_extension", ".mls", "pygments_lexer", "r", "codemirror_mode", "r",
                   "banner", "MLS " MLS_VERSION " -- help() lists builtins, ?name explains one",
                   "help_links");
}

static void reply(Kernel *K, void *sock, const WireMsg *req, const char *type, json_t *content) {
  if (wire_send(&K->wire, sock, req, NULL, type, content) != 0)
    fprintf(stderr, "mls kernel: cannot send %s: %s\n", type, zmq_strerror(zmq_errno()));
}

static bool is_name_char(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'; }

/* Appends the cell to t, with each line "?name" turned into help("name") as in the REPL. */
static void rewrite_help(TextBuf *t, const char *code) {
  for (const char *line = code; *line;) {
    const char *eol = strchr(line, '\n');
    size_t n = eol ? (size_t)(eol - line) : strlen(line);
    const char *p = line, *end = line + n;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    bool done = false;
    if (p < end && *p == '?') {
      p++;
      while (p < end && (*p == ' ' || *p == '\t')) p++;
      const char *s = p;
      while (p < end && (is_name_char((unsigned char)*p) || *p == ':')) p++;
      const char *e = p;
      while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
      if (p == end && e > s) { tb_printf(t, "help(\"%.*s\")", (int)(e - s), s); done = true; }
    }
    if (!done) tb_putn(t, line, n);
    if (!eol) break;
    tb_puts(t, "\n");
    line = eol + 1;
  }
}

/* Splits text into a JSON array of its lines (an error's traceback). */
static json_t *lines_of(const char *text) {
  json_t *a = json_array();
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    json_array_append_new(a, wire_text(p, n));
    p += n + (e ? 1 : 0);
  }
  return a;
}

/* The JSON type of v, for messages. */
static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: case JSON_REAL: return "a number";
  case JSON_TRUE: case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

/* The request's content.code, or NULL after an error reply of type rtype when it is missing
** or not a string (a malformed request is answered, not run as an empty cell). */
static const char *request_code(Kernel *K, const WireMsg *m, const char *rtype) {
  json_t *c = json_object_get(m->content, "code");
  if (json_is_string(c)) return json_string_value(c);
  const char *type = json_string_value(json_object_get(m->header, "msg_type"));
  char msg[160];
  snprintf(msg, sizeof msg, "%s: content.code must be a string, got %s", type, c ? json_kind(c) : "nothing");
  json_t *r = json_pack("{s:s, s:s, s:s, s:[s]}", "status", "error", "ename", "BadRequest", "evalue", msg,
                        "traceback", msg);
  if (!strcmp(rtype, "execute_reply")) {
    json_object_set_new(r, "execution_count", json_integer(K->count));
    if (!json_is_true(json_object_get(m->content, "silent")))
      publish(K, m, "error", json_pack("{s:s, s:s, s:[s]}", "ename", "BadRequest", "evalue", msg, "traceback", msg));
  }
  reply(K, K->shell, m, rtype, r);
  return NULL;
}

/* ---- %time and %%time (IPython's magics) ---- */
typedef struct Clock { double wall, user, sys; } Clock;

static Clock clock_now(void) {
  struct timespec ts;
  struct rusage ru;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  getrusage(RUSAGE_SELF, &ru);
  return (Clock){ (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec,
                  (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec,
                  (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec };
}

/* A time span as IPython's _format_time writes it: 3 significant digits in s, ms, µs or ns. */
static void fmt_span(char *buf, size_t n, double t) {
  static const char *const units[] = { "s", "ms", "\xc2\xb5s", "ns" };
  static const double scale[] = { 1, 1e3, 1e6, 1e9 };
  if (t >= 60) { snprintf(buf, n, "%dmin %.1fs", (int)(t / 60), fmod(t, 60)); return; }
  int order = 3;
  if (t > 0) {
    order = -(int)floor(floor(log10(t)) / 3.0);   /* -(floor(log10 t) // 3), as IPython */
    if (order < 0) order = 0;
    if (order > 3) order = 3;
  }
  if (order > 0 && t * scale[order] >= 999.5) order--;   /* 999.7 ns is "1 µs", not "1e+03 ns" */
  snprintf(buf, n, "%.3g %s", t * scale[order], units[order]);
}

/* "CPU times: user ..., sys: ..., total: ...\nWall time: ...\n" since c0, as a stdout stream
** that leaves the cell's pending result pending (it is still the cell's result). */
static void report_time(Kernel *K, Clock c0) {
  Clock c1 = clock_now();
  fflush(K->I->out);
  fflush(K->err);
  char u[32], sy[32], tot[32], w[32], line[192];
  fmt_span(u, sizeof u, c1.user - c0.user);
  fmt_span(sy, sizeof sy, c1.sys - c0.sys);
  fmt_span(tot, sizeof tot, c1.user - c0.user + c1.sys - c0.sys);
  fmt_span(w, sizeof w, c1.wall - c0.wall);
  int n = snprintf(line, sizeof line, "CPU times: user %s, sys: %s, total: %s\nWall time: %s\n", u, sy, tot, w);
  stream(K, "stdout", line, (size_t)n);
}

/* Whether line [p, e) is the magic `magic` ("%time", "%%time"), alone or followed by a blank;
** *after: where what follows it starts. */
static bool is_magic(const char *p, const char *e, const char *magic, const char **after) {
  while (p < e && (*p == ' ' || *p == '\t')) p++;
  size_t n = strlen(magic);
  if ((size_t)(e - p) < n || strncmp(p, magic, n) != 0) return false;
  if (p + n < e && p[n] != ' ' && p[n] != '\t' && p[n] != '\r') return false;
  *after = p + n;
  return true;
}

/* Runs lines [l0, l1) of the cell's text (line starts in ls, nl lines), the others blanked so
** that messages keep the cell's line numbers. */
static int run_lines(Kernel *K, const char *name, const char *code, const size_t *ls, int nl, int l0, int l1) {
  TextBuf t;
  tb_init(&t);
  for (int i = 0; i < l0; i++) tb_puts(&t, "\n");
  size_t b = ls[l0], e = l1 < nl ? ls[l1] : strlen(code);
  tb_putn(&t, code + b, e - b);
  Source *src = source_new(name, t.p ? t.p : "", t.n);
  tb_free(&t);
  int st = interp_run_source(K->I, src, true);
  source_release(src);
  return st;
}

/* Whether lines [l0, l1) parse as a whole: not still open (the parser at the end of input). */
static bool lines_complete(Kernel *K, const char *code, const size_t *ls, int nl, int l0, int l1) {
  size_t b = ls[l0], e = l1 < nl ? ls[l1] : strlen(code);
  Source *src = source_new("<time>", code + b, e - b);
  ParseError pe;
  Chunk *ch = parse_chunk(&K->I->syms, &K->I->spare_parser, src, &pe);
  source_release(src);
  if (ch) chunk_release(ch);
  return ch || !pe.at_eof;
}

/*
** Runs a cell (after ?name rewriting) as `name`. A first line "%%time" times the whole cell; a
** line "%time stmt" times that statement (with the lines that continue it), IPython's magics:
** "CPU times: user 1.2 ms, sys: 0 ns, total: 1.2 ms" and "Wall time: 1.3 ms" follow it on
** stdout. The magic's own characters become blanks, so line and column numbers stay the cell's.
** Returns as interp_run_source.
*/
static int run_cell(Kernel *K, const char *name, char *code) {
  size_t nls = 1;
  for (const char *p = code; *p; p++) nls += *p == '\n';
  size_t *ls = malloc(nls * sizeof *ls);
  bool *timed = calloc(nls, 1);
  if (!ls || !timed) { free(ls); free(timed); return 1; }
  int nl = 0;
  bool any = false, whole = false;
  for (char *p = code;;) {
    char *e = strchr(p, '\n');
    if (!e) e = p + strlen(p);
    const char *after;
    ls[nl] = (size_t)(p - code);
    if (nl == 0 && is_magic(p, e, "%%time", &after)) {
      whole = true;
      memset(p, ' ', (size_t)(after - p));
    } else if (is_magic(p, e, "%time", &after)) {
      timed[nl] = any = true;
      memset(p, ' ', (size_t)(after - p));
    }
    nl++;
    if (!*e) break;
    p = e + 1;
  }
  Clock c0 = clock_now();
  int st = 0;
  if (!any) {
    Source *src = source_new(name, code, strlen(code));
    st = interp_run_source(K->I, src, true);
    source_release(src);
  } else {
    int from = 0;
    for (int i = 0; i < nl && st == 0; i++) {
      if (!timed[i]) continue;
      if (i > from) st = run_lines(K, name, code, ls, nl, from, i);
      if (st) break;
      int end = i + 1;
      while (end < nl && !lines_complete(K, code, ls, nl, i, end)) end++;
      Clock t0 = clock_now();
      st = run_lines(K, name, code, ls, nl, i, end);
      if (st == 0) report_time(K, t0);
      from = end;
      i = end - 1;
    }
    if (st == 0 && from < nl) st = run_lines(K, name, code, ls, nl, from, nl);
  }
  if (whole && st == 0) report_time(K, c0);
  free(ls);
  free(timed);
  return st;
}

/* A cell that is only `exit` or `quit` (names bound to no value) or `exit()`: as quit(), so
** that `jupyter console` ends as IPython's does. */
static bool is_exit(Interp *I, const char *code) {
  while (*code == ' ' || *code == '\t' || *code == '\n' || *code == '\r') code++;
  size_t n = strlen(code);
  while (n && (code[n - 1] == ' ' || code[n - 1] == '\t' || code[n - 1] == '\n' || code[n - 1] == '\r')) n--;
  if (n == 6 && !strncmp(code, "exit()", 6)) return true;
  if (n != 4 || (strncmp(code, "exit", 4) && strncmp(code, "quit", 4))) return false;
  Symbol *s = sym_lookup(&I->syms, code, 4);
  return !s || s->global.t == VT_UNBOUND;
}

static void do_execute(Kernel *K, const WireMsg *m) {
  Interp *I = K->I;
  const char *code = request_code(K, m, "execute_reply");
  if (!code) return;
  bool silent = json_is_true(json_object_get(m->content, "silent"));
  json_t *sh = json_object_get(m->content, "store_history");
  bool store = !silent && (!sh || json_is_true(sh));
  if (store) K->count++;
  if (!silent)
    publish(K, m, "execute_input", json_pack("{s:s, s:i}", "code", code, "execution_count", K->count));
  K->silent = silent;
  TextBuf t;
  tb_init(&t);
  if (is_exit(I, code)) tb_puts(&t, "quit()");
  else rewrite_help(&t, code);
  char name[48];
  snprintf(name, sizeof name, "<cell %d>", K->count);
  char *ebuf = NULL;
  size_t elen = 0;
  FILE *ef = open_memstream(&ebuf, &elen);
  FILE *saved_err = I->errf;
  if (ef) I->errf = ef;
  I->interrupted = 0;
  int st = run_cell(K, name, t.p ? t.p : (char[]){ "" });
  tb_free(&t);
  fflush(I->out);
  fflush(K->err);
  I->errf = saved_err;
  if (ef) fclose(ef);
  plot_flush(I);
  json_t *payload = json_array();
  if (I->quitting) {              /* IPython's exit: jupyter console ends its session */
    st = 0;
    atomic_store(&K->shutdown, 1);
    json_array_append_new(payload, json_pack("{s:s, s:b}", "source", "ask_exit", "keepkernel", 0));
  }
  json_t *r;
  if (st == 0) {
    if (K->pending && !silent) {
      json_t *data = bundle(K->pending, K->npending, K->pending_html);
      publish(K, m, "execute_result", json_pack("{s:i, s:o, s:{}}", "execution_count", K->count, "data", data, "metadata"));
      free(K->pending);
      K->pending = NULL;
      free(K->pending_html);
      K->pending_html = NULL;
    }
    flush_pending(K);
    if (elen) stream(K, "stderr", ebuf, elen);
    r = json_pack("{s:s, s:i, s:{}, s:o}", "status", "ok", "execution_count", K->count, "user_expressions", "payload", payload);
  } else {
    flush_pending(K);
    const char *text = ebuf && elen ? ebuf : "error\n";
    const char *nl = strchr(text, '\n');
    json_t *evalue = wire_text(text, nl ? (size_t)(nl - text) : strlen(text));
    const char *ename = st == 2 ? "SyntaxError" : "Error";
    if (!silent)
      publish(K, m, "error", json_pack("{s:s, s:O, s:o}", "ename", ename, "evalue", evalue, "traceback", lines_of(text)));
    r = json_pack("{s:s, s:i, s:s, s:o, s:o, s:{}}", "status", "error", "execution_count", K->count, "ename", ename,
                  "evalue", evalue, "traceback", lines_of(text), "user_expressions");
    json_decref(payload);
  }
  free(ebuf);
  K->silent = false;
  reply(K, K->shell, m, "execute_reply", r);
}

/* Byte offset of code point cp in s (clamped to the end). */
static size_t cp_to_byte(const char *s, long cp) {
  size_t i = 0;
  for (long k = 0; s[i] && k < cp; k++) {
    i++;
    while (((unsigned char)s[i] & 0xc0) == 0x80) i++;
  }
  return i;
}

/* Number of code points in the first n bytes of s. */
static long byte_to_cp(const char *s, size_t n) {
  long k = 0;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xc0) != 0x80) k++;
  return k;
}

static void add_match(json_t *a, const char *prefix, size_t plen, const char *name) {
  if (strncmp(name, prefix, plen) != 0) return;
  size_t n = json_array_size(a);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(json_string_value(json_array_get(a, i)), name)) return;
  json_array_append_new(a, json_string(name));
}

static int cmp_json_str(const void *a, const void *b) {
  return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static const List *global_list(Interp *I, const char *name, size_t len) {
  Symbol *s = sym_lookup(&I->syms, name, len);
  return s && s->global.t == VT_LIST ? s->global.u.l : NULL;
}

/* The list "a$b$c" names (the text of code up to end, just before '$'), through globals and list
** members only: completion never runs code. */
static const List *chain_list(Interp *I, const char *code, size_t end) {
  size_t b = end;
  while (b > 0 && (is_name_char((unsigned char)code[b - 1]) || code[b - 1] == '$')) b--;
  size_t e = b;
  while (e < end && code[e] != '$') e++;
  const List *l = e > b ? global_list(I, code + b, e - b) : NULL;
  while (l && e < end) {
    b = e + 1;
    e = b;
    while (e < end && code[e] != '$') e++;
    Symbol *s = sym_lookup(&I->syms, code + b, e - b);
    int k = s ? list_find(l, s) : -1;
    l = k >= 0 && l->items[k].t == VT_LIST ? l->items[k].u.l : NULL;
  }
  return l;
}

static void add_members(json_t *a, const List *l, const char *prefix, size_t plen) {
  if (!l || !l->names) return;
  for (int i = 0; i < l->n; i++)
    if (l->names[i]) add_match(a, prefix, plen, l->names[i]->name);
}

/* complete_request: list members after "x$" or "ns::", else keywords, builtins (C and
** stdlib/builtin/NAME.mls) and the names bound at top level. */
static void do_complete(Kernel *K, const WireMsg *m) {
  Interp *I = K->I;
  const char *code = request_code(K, m, "complete_reply");
  if (!code) return;
  json_t *cp = json_object_get(m->content, "cursor_pos");
  size_t end = cp_to_byte(code, json_is_integer(cp) ? (long)json_integer_value(cp) : LONG_MAX);
  size_t start = end;
  while (start > 0 && is_name_char((unsigned char)code[start - 1])) start--;
  const char *prefix = code + start;
  size_t plen = end - start;
  json_t *a = json_array();
  if (start >= 1 && code[start - 1] == '$') {
    add_members(a, chain_list(I, code, start - 1), prefix, plen);
  } else if (start >= 2 && code[start - 1] == ':' && code[start - 2] == ':') {
    size_t b = start - 2;
    while (b > 0 && is_name_char((unsigned char)code[b - 1])) b--;
    add_members(a, global_list(I, code + b, start - b), prefix, plen);   /* "ns::": the namespace */
  } else if (!(plen && prefix[0] >= '0' && prefix[0] <= '9')) {
    for (int i = 0; keywords[i]; i++) add_match(a, prefix, plen, keywords[i]);
    for (int i = 0; i < builtin_count; i++) add_match(a, prefix, plen, builtin_table[i].name);
    for (uint32_t b = 0; b < I->syms.nbuckets; b++)
      for (Symbol *s = I->syms.buckets[b]; s; s = s->next)
        if (s->global.t != VT_UNBOUND && !sym_is_namespace(s)) add_match(a, prefix, plen, s->name);
    char buf[PATH_MAX], dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/builtin", interp_stdlib_dir(I, buf, sizeof buf));
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      size_t n = strlen(e->d_name);
      if (n > 4 && !strcmp(e->d_name + n - 4, ".mls")) {
        e->d_name[n - 4] = '\0';
        add_match(a, prefix, plen, e->d_name);
      }
    }
    if (d) closedir(d);
  }
  size_t n = json_array_size(a);
  json_t **v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; v && i < n; i++) v[i] = json_incref(json_array_get(a, i));
  if (v) {
    qsort(v, n, sizeof *v, cmp_json_str);
    json_array_clear(a);
    for (size_t i = 0; i < n; i++) json_array_append_new(a, v[i]);
    free(v);
  }
  reply(K, K->shell, m, "complete_reply",
        json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", a,
                  "cursor_start", (json_int_t)byte_to_cp(code, start), "cursor_end", (json_int_t)byte_to_cp(code, end),
                  "metadata"));
}

/* Runs code with out and errf captured; returns what it printed on out (malloc'ed) and its
** exit status in *st. The flags of the running cell are left as they were. */
static char *run_captured(Kernel *K, const char *name, const char *code, int *st) {
  Interp *I = K->I;
  char *obuf = NULL, *ebuf = NULL;
  size_t olen = 0, elen = 0;
  FILE *of = open_memstream(&obuf, &olen), *ef = open_memstream(&ebuf, &elen);
  if (!of || !ef) {
    if (of) fclose(of);
    if (ef) fclose(ef);
    free(obuf);
    free(ebuf);
    *st = 1;
    return NULL;
  }
  FILE *so = I->out, *se = I->errf;
  I->out = of;
  I->errf = ef;
  Source *src = source_new(name, code, strlen(code));
  I->interrupted = 0;               /* a Ctrl-C that came while idle is for the next cell */
  *st = interp_run_source(I, src, false);
  source_release(src);
  I->out = so;
  I->errf = se;
  fclose(of);
  fclose(ef);
  free(ebuf);
  return obuf;
}

/* inspect_request: help() of the name under (or just before) the cursor. */
static void do_inspect(Kernel *K, const WireMsg *m) {
  const char *code = request_code(K, m, "inspect_reply");
  if (!code) return;
  json_t *cp = json_object_get(m->content, "cursor_pos");
  size_t at = cp_to_byte(code, json_is_integer(cp) ? (long)json_integer_value(cp) : LONG_MAX);
  size_t s = at, e = at;
  while (s > 0 && (is_name_char((unsigned char)code[s - 1]) || code[s - 1] == ':')) s--;
  while (code[e] && (is_name_char((unsigned char)code[e]) || code[e] == ':')) e++;
  while (s < e && code[s] == ':') s++;
  json_t *data = json_object();
  bool found = false;
  if (e > s && e - s < 200) {
    char call[256];
    snprintf(call, sizeof call, "help(\"%.*s\")", (int)(e - s), code + s);
    int st;
    char *text = run_captured(K, "<inspect>", call, &st);
    if (text && st == 0 && *text) {
      json_object_set_new(data, "text/plain", wire_text(text, strlen(text)));
      found = true;
    }
    free(text);
  }
  reply(K, K->shell, m, "inspect_reply",
        json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", found, "data", data, "metadata"));
}

/* is_complete_request: "incomplete" when the parser wants more (its at_eof flag, as the REPL's
** "+ " prompt), "invalid" on another syntax error, else "complete". */
static void do_is_complete(Kernel *K, const WireMsg *m) {
  const char *code = request_code(K, m, "is_complete_reply");
  if (!code) return;
  TextBuf t;
  tb_init(&t);
  rewrite_help(&t, code);
  for (char *p = t.p; p && *p;) {             /* %time and %%time: blanks, as run_cell reads them */
    char *e = strchr(p, '\n');
    if (!e) e = p + strlen(p);
    const char *after;
    if ((p == t.p && is_magic(p, e, "%%time", &after)) || is_magic(p, e, "%time", &after))
      memset(p, ' ', (size_t)(after - p));
    p = *e ? e + 1 : e;
  }
  Source *src = source_new("<cell>", t.p ? t.p : "", t.n);
  tb_free(&t);
  ParseError pe;
  Chunk *ch = parse_chunk(&K->I->syms, &K->I->spare_parser, src, &pe);
  source_release(src);
  json_t *r;
  if (ch) {
    chunk_release(ch);
    r = json_pack("{s:s}", "status", "complete");
  } else if (pe.at_eof) {
    r = json_pack("{s:s, s:s}", "status", "incomplete", "indent", "  ");
  } else {
    r = json_pack("{s:s}", "status", "invalid");
  }
  reply(K, K->shell, m, "is_complete_reply", r);
}

static void do_shutdown(Kernel *K, void *sock, const WireMsg *m) {
  bool restart = json_is_true(json_object_get(m->content, "restart"));
  reply(K, sock, m, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
  atomic_store(&K->shutdown, 1);
  K->I->interrupted = 1;            /* a cell still running stops */
}

static void handle_shell(Kernel *K, const WireMsg *m) {
  const char *type = json_string_value(json_object_get(m->header, "msg_type"));
  publish_status(K, m, "busy");
  K->cur = m;
  if (!strcmp(type, "execute_request")) do_execute(K, m);
  else if (!strcmp(type, "kernel_info_request")) reply(K, K->shell, m, "kernel_info_reply", kernel_info());
  else if (!strcmp(type, "complete_request")) do_complete(K, m);
  else if (!strcmp(type, "inspect_request")) do_inspect(K, m);
  else if (!strcmp(type, "is_complete_request")) do_is_complete(K, m);
  else if (!strcmp(type, "history_request"))
    reply(K, K->shell, m, "history_reply", json_pack("{s:s, s:[]}", "status", "ok", "history"));
  else if (!strcmp(type, "comm_info_request"))
    reply(K, K->shell, m, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
  else if (!strcmp(type, "shutdown_request")) do_shutdown(K, K->shell, m);
  else fprintf(stderr, "mls kernel: ignored a %s\n", type);
  K->cur = NULL;
  publish_status(K, m, "idle");
}

/* ---- threads ---- */
/* The heartbeat: a ROUTER that sends every message back as it came (zmq_proxy onto itself);
** it ends when the context is shut down. */
static void *hb_main(void *p) {
  Kernel *K = p;
  mem_forbid_thread();                     /* only the interpreter's thread may allocate (mem.h) */
  zmq_proxy(K->hb, K->hb, NULL);
  zmq_close(K->hb);
  return NULL;
}

/* Whether the process that started the kernel is gone (ipykernel's parent poller): the parent
** at start was replaced (the kernel was re-parented), or JPY_PARENT_PID names no process. */
static bool parent_gone(const Kernel *K) {
  if (K->parent <= 1) return false;
  if (K->parent == K->ppid0) return getppid() != K->ppid0;
  return kill(K->parent, 0) != 0 && errno == ESRCH;
}

/* The control channel, on its own thread so it answers while a cell runs: interrupt_request
** sets the interpreter's interrupt flag, shutdown_request ends the kernel. Between messages
** (twice a second) it polls for the parent process: when it is gone, the running cell is
** interrupted and the kernel ends with status 1; one that has not ended 10 s later (a cell
** in a long native call) exits at once. */
static void *control_main(void *p) {
  Kernel *K = p;
  mem_forbid_thread();
  int orphan_ticks = 0;
  for (;;) {
    zmq_pollitem_t it[1] = { { K->control, 0, ZMQ_POLLIN, 0 } };
    int prc = zmq_poll(it, 1, 500);
    if (prc < 0) {
      if (zmq_errno() == EINTR) continue;
      break;                                    /* ETERM: the kernel is closing */
    }
    if (orphan_ticks || parent_gone(K)) {
      if (orphan_ticks == 0) {
        fprintf(stderr, "mls kernel: the parent process %d is gone; exiting\n", (int)K->parent);
        atomic_store(&K->orphaned, 1);
        atomic_store(&K->shutdown, 1);
        K->I->interrupted = SIGTERM;
      }
      if (++orphan_ticks > 20) _exit(1);
    }
    if (!(it[0].revents & ZMQ_POLLIN)) continue;
    WireMsg m;
    int rc = wire_recv(&K->wire, K->control, &m);
    if (rc < 0) {
      if (zmq_errno() == EINTR || zmq_errno() == EAGAIN) continue;
      break;                                    /* ETERM: the kernel is closing */
    }
    if (rc > 0) continue;
    const char *type = json_string_value(json_object_get(m.header, "msg_type"));
    publish_status(K, &m, "busy");
    if (!strcmp(type, "interrupt_request")) {
      K->I->interrupted = 1;
      reply(K, K->control, &m, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
    } else if (!strcmp(type, "shutdown_request")) {
      do_shutdown(K, K->control, &m);
    } else if (!strcmp(type, "kernel_info_request")) {
      reply(K, K->control, &m, "kernel_info_reply", kernel_info());
    } else {
      fprintf(stderr, "mls kernel: ignored a %s on control\n", type);
    }
    publish_status(K, &m, "idle");
    wire_msg_free(&m);
  }
  zmq_close(K->control);
  return NULL;
}

/* ---- setup ---- */
static void *bind_socket(Kernel *K, int type, const char *transport, const char *ip, json_t *port,
                         char *err, size_t errn) {
  void *s = zmq_socket(K->ctx, type);
  if (!s) { snprintf(err, errn, "cannot make a socket: %s", zmq_strerror(zmq_errno())); return NULL; }
  int linger = 1000;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  /* a frame larger than this disconnects its peer before it is held: an unauthenticated peer
  ** cannot make the kernel allocate what it likes (the signature is checked only after) */
  int64_t max = K->opt.max_message;
  zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof max);
  char ep[PATH_MAX + 64];
  if (!json_is_integer(port)) {
    snprintf(err, errn, "the connection file lacks a port");
    zmq_close(s);
    return NULL;
  }
  if (!strcmp(transport, "ipc")) snprintf(ep, sizeof ep, "ipc://%s-%lld", ip, (long long)json_integer_value(port));
  else snprintf(ep, sizeof ep, "%s://%s:%lld", transport, ip, (long long)json_integer_value(port));
  if (zmq_bind(s, ep) != 0) {
    snprintf(err, errn, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
    zmq_close(s);
    return NULL;
  }
  return s;
}

Kernel *kernel_open(Interp *I, const char *connection_file, char *err, size_t errn) {
  return kernel_open_with(I, connection_file, NULL, err, errn);
}

Kernel *kernel_open_with(Interp *I, const char *connection_file, const KernelOptions *o, char *err, size_t errn) {
  json_error_t je;
  json_t *cf = json_load_file(connection_file, 0, &je);
  if (!json_is_object(cf)) {
    snprintf(err, errn, "cannot read the connection file %s: %s", connection_file, je.text);
    json_decref(cf);
    return NULL;
  }
  /* the key: as Jupyter, "" (or none) means that messages are neither signed nor checked;
  ** then anyone who can reach the ports runs code as this user, so it takes --allow-no-key */
  json_t *kj = json_object_get(cf, "key");
  if (kj && !json_is_string(kj)) {
    snprintf(err, errn, "the connection file %s: \"key\" must be a string", connection_file);
    json_decref(cf);
    return NULL;
  }
  const char *key = kj ? json_string_value(kj) : "";
  if (!*key) {
    if (!o || !o->allow_no_key) {
      snprintf(err, errn, "the connection file %s has no key: its messages would not be signed, and any process "
               "that can reach its ports could run code as you; give --allow-no-key to run so anyway", connection_file);
      json_decref(cf);
      return NULL;
    }
    fprintf(stderr, "mls kernel: warning: the connection file %s has no key: messages are not signed or checked "
            "(--allow-no-key)\n", connection_file);
  }
  Kernel *K = calloc(1, sizeof *K);
  if (!K) { snprintf(err, errn, "out of memory"); json_decref(cf); return NULL; }
  K->I = I;
  if (o) K->opt = *o;
  else kernel_options_default(&K->opt);
  pthread_mutex_init(&K->iopub_lock, NULL);
  K->ppid0 = getppid();
  const char *jp = getenv("JPY_PARENT_PID");
  char *jend;
  long jpid = jp && *jp ? strtol(jp, &jend, 10) : 0;
  K->parent = jpid > 1 && !*jend ? (pid_t)jpid : K->ppid0;
  const char *transport = json_string_value(json_object_get(cf, "transport"));
  const char *ip = json_string_value(json_object_get(cf, "ip"));
  bool ok = wire_init(&K->wire, key, json_string_value(json_object_get(cf, "signature_scheme")), err, errn);
  if (ok) K->ctx = zmq_ctx_new();
  ok = ok && K->ctx;
  if (!transport) transport = "tcp";
  if (!ip) ip = "127.0.0.1";
  if (ok) {
    (void)((K->shell = bind_socket(K, ZMQ_ROUTER, transport, ip, json_object_get(cf, "shell_port"), err, errn)) &&
    (K->control = bind_socket(K, ZMQ_ROUTER, transport, ip, json_object_get(cf, "control_port"), err, errn)) &&
    (K->stdin_sock = bind_socket(K, ZMQ_ROUTER, transport, ip, json_object_get(cf, "stdin_port"), err, errn)) &&
    (K->iopub = bind_socket(K, ZMQ_PUB, transport, ip, json_object_get(cf, "iopub_port"), err, errn)) &&
    (K->hb = bind_socket(K, ZMQ_ROUTER, transport, ip, json_object_get(cf, "hb_port"), err, errn)));
    ok = K->hb != NULL;
  }
  json_decref(cf);
  if (ok) {
    K->hb_started = pthread_create(&K->hb_thread, NULL, hb_main, K) == 0;
    K->control_started = pthread_create(&K->control_thread, NULL, control_main, K) == 0;
    ok = K->hb_started && K->control_started;
    if (!ok) snprintf(err, errn, "cannot start a thread");
  }
  if (ok) {
    cookie_io_functions_t io = { NULL, sink_write, NULL, NULL };
    K->sout = (Sink){ K, "stdout", { 0 }, 0 };
    K->serr = (Sink){ K, "stderr", { 0 }, 0 };
    K->out = fopencookie(&K->sout, "w", io);
    K->err = fopencookie(&K->serr, "w", io);
    ok = K->out && K->err;
    if (!ok) snprintf(err, errn, "cannot open the output streams");
    else {
      setvbuf(K->out, NULL, _IOLBF, 8192);
      setvbuf(K->err, NULL, _IOLBF, 8192);
    }
  }
  if (!ok) {
    if (K->out) fclose(K->out);
    if (K->err) fclose(K->err);
    K->out = K->err = NULL;
    kernel_close(K);
    return NULL;
  }
  K->saved_out = I->out;
  K->saved_stderr_to = I->stderr_to;
  I->stderr_to = K->err;
  K->saved_echo = I->echo;
  K->saved_display = I->display;
  K->saved_display_value = I->display_value;
  K->saved_progress = I->progress;
  K->saved_ctx = I->display_ctx;
  I->out = K->out;
  I->echo = on_echo;
  I->display = on_display;
  I->display_value = on_display_value;
  I->progress = on_progress;
  I->display_ctx = K;
  g_kernel = K;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  return K;
}

int kernel_serve(Kernel *K) {
  publish_status(K, NULL, "starting");
  while (!atomic_load(&K->shutdown)) {
    zmq_pollitem_t it[1] = { { K->shell, 0, ZMQ_POLLIN, 0 } };
    int rc = zmq_poll(it, 1, 200);
    if (rc < 0) {
      if (zmq_errno() == EINTR) continue;
      break;
    }
    if (!(it[0].revents & ZMQ_POLLIN)) continue;
    WireMsg m;
    rc = wire_recv(&K->wire, K->shell, &m);
    if (rc != 0) continue;
    handle_shell(K, &m);
    wire_msg_free(&m);
  }
  if (atomic_load(&K->orphaned)) return 1;
  return K->I->quitting ? K->I->quit_status : 0;
}

void kernel_close(Kernel *K) {
  if (!K) return;
  Interp *I = K->I;
  if (g_kernel == K) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    g_kernel = NULL;
  }
  if (K->err && I->stderr_to == K->err) {
    fflush(K->err);
    I->stderr_to = K->saved_stderr_to;
  }
  if (K->err) fclose(K->err);
  if (K->out) {
    fflush(K->out);
    I->out = K->saved_out;
    I->echo = K->saved_echo;
    I->display = K->saved_display;
    I->display_value = K->saved_display_value;
    I->progress = K->saved_progress;
    I->display_ctx = K->saved_ctx;
    fclose(K->out);
  }
  free(K->pending);
  free(K->pending_html);
  if (K->ctx) zmq_ctx_shutdown(K->ctx);         /* blocking calls of the threads return ETERM */
  if (K->hb_started) pthread_join(K->hb_thread, NULL);
  else if (K->hb) zmq_close(K->hb);
  if (K->control_started) pthread_join(K->control_thread, NULL);
  else if (K->control) zmq_close(K->control);
  if (K->shell) zmq_close(K->shell);
  if (K->stdin_sock) zmq_close(K->stdin_sock);
  if (K->iopub) zmq_close(K->iopub);
  if (K->ctx) zmq_ctx_term(K->ctx);
  wire_free(&K->wire);
  pthread_mutex_destroy(&K->iopub_lock);
  free(K);
}

int kernel_run(Interp *I, const char *connection_file, const KernelOptions *o) {
  char err[1024];
  Kernel *K = kernel_open_with(I, connection_file, o, err, sizeof err);
  if (!K) {
    fprintf(stderr, "mls: %s\n", err);
    return 2;
  }
  int st = kernel_serve(K);
  kernel_close(K);
  return st;
}

_Static_assert(KERNEL_MAX_MESSAGE_DEFAULT == WIRE_MAX_MESSAGE_DEFAULT, "kernel.h and wire.h: one default");

/* The plugin's entry (plugin.h, kernel.h): the one symbol libmls_kernel.so exports. */
__attribute__((visibility("default"))) const KernelPlugin mls_kernel_plugin = {
  /* .run = */ kernel_run,
};
