/*
** kernel.c — the Jupyter kernel: sockets and threads (heartbeat echo, control), and the shell
** requests (execute, complete, inspect, is_complete, kernel_info, shutdown) run on one Interp.
*/
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>
#include "builtins.h"
#include "kernel/kernel.h"
#include "kernel/wire.h"
#include "mem.h"
#include "parse.h"
#include "plot/plot.h"
#include "print.h"

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
  int count;                      /* execution_count */
  const WireMsg *cur;             /* the request being answered: parent of what is published */
  bool silent;                    /* its content.silent: publish no output */
  FILE *out, *err;                /* I->out and I->stderr_to while serving: stream messages */
  Sink sout, serr;
  char *pending;                  /* the last echoed value, not yet sent (the cell's result) */
  size_t npending;
  FILE *saved_out, *saved_stderr_to;
  void (*saved_echo)(Interp *, const char *, size_t, void *);
  void (*saved_display)(Interp *, const char *, const unsigned char *, size_t, void *);
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

/* I->echo: holds the value; the last one left when the cell ends is its execute_result. */
static void on_echo(Interp *I, const char *text, size_t len, void *ctx) {
  Kernel *K = ctx;
  fflush(I->out);                   /* output printed before it goes first */
  fflush(K->err);
  flush_pending(K);
  K->pending = malloc(len + 2);
  if (!K->pending) return;
  memcpy(K->pending, text, len);
  K->pending[len] = '\0';
  K->npending = len;
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
  rewrite_help(&t, code);
  char name[48];
  snprintf(name, sizeof name, "<cell %d>", K->count);
  Source *src = source_new(name, t.p ? t.p : "", t.n);
  tb_free(&t);
  char *ebuf = NULL;
  size_t elen = 0;
  FILE *ef = open_memstream(&ebuf, &elen);
  FILE *saved_err = I->errf;
  if (ef) I->errf = ef;
  I->interrupted = 0;
  int st = interp_run_source(I, src, true);
  source_release(src);
  fflush(I->out);
  fflush(K->err);
  I->errf = saved_err;
  if (ef) fclose(ef);
  plot_flush(I);
  if (I->quitting) { st = 0; atomic_store(&K->shutdown, 1); }
  json_t *r;
  if (st == 0) {
    if (K->pending && !silent) {
      json_t *data = json_pack("{s:o}", "text/plain", wire_text(K->pending, K->npending));
      publish(K, m, "execute_result", json_pack("{s:i, s:o, s:{}}", "execution_count", K->count, "data", data, "metadata"));
      free(K->pending);
      K->pending = NULL;
    }
    flush_pending(K);
    if (elen) stream(K, "stderr", ebuf, elen);
    r = json_pack("{s:s, s:i, s:{}, s:[]}", "status", "ok", "execution_count", K->count, "user_expressions", "payload");
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

/* The control channel, on its own thread so it answers while a cell runs: interrupt_request
** sets the interpreter's interrupt flag, shutdown_request ends the kernel. */
static void *control_main(void *p) {
  Kernel *K = p;
  mem_forbid_thread();
  for (;;) {
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

void kernel_options_default(KernelOptions *o) {
  o->max_message = WIRE_MAX_MESSAGE_DEFAULT;
  o->allow_no_key = false;
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
  K->saved_ctx = I->display_ctx;
  I->out = K->out;
  I->echo = on_echo;
  I->display = on_display;
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
    I->display_ctx = K->saved_ctx;
    fclose(K->out);
  }
  free(K->pending);
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

int kernel_main(Interp *I, const char *connection_file, const KernelOptions *o) {
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
