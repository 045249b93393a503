/*
** repl.c — the REPL (lua.c model): readline's callback interface behind repl_readline and
** repl_saveline, multi-line chunks keyed on the parser's at_eof flag, Ctrl-C as a flag, completion.
*/
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <readline/history.h>
#include <readline/readline.h>
#include "builtins.h"
#include "mem.h"
#include "plot/plot.h"
#include "print.h"
#include "repl.h"

#define REPL_HISTORY_MAX 1000

/* Words readline splits on outside strings. '.' and '_' belong to names (as.double). */
static const char word_breaks[] = " \t\n\"'`@$><=;|&{(,)}[]+-*/%^!~:?";

/* grep ORDER KEYWORD: the reserved words of grammar/lexer.re, for completion. */
static const char *const keywords[] = {
  "if", "else", "while", "for", "parfor", "in", "function", "return", "break", "next",
  "repeat", "TRUE", "FALSE", "Inf", "NaN", "NA", "NULL", NULL
};

enum { READ_LINE, READ_EOF, READ_INTERRUPT };
enum { SIG_INT = 1, SIG_WINCH = 2, SIG_HUP = 4 };   /* what the signal pipe reported */

typedef struct Repl {
  Interp *I;
  int sigpipe[2];            /* the signal handler writes a byte here; the prompt's poll() wakes */
  volatile sig_atomic_t at_prompt;   /* readline is reading a line (else code is running) */
  volatile sig_atomic_t hangup;      /* the terminal went away (SIGHUP): save history and leave */
  char *line;                /* what readline handed to on_line (malloc'ed; NULL on Ctrl-D) */
  bool line_done;
  char **libnames;           /* function names defined in the stdlib's *.mls files */
  int nlib, caplib;
} Repl;

/* The only static state: the signal handler, readline's line handler and its completion
** function take no user pointer, so they reach the REPL through this. Set while repl_run runs. */
static Repl *g_repl;

/*
** SIGINT only sets the interpreter's flag (the evaluator raises "interrupted" at its next loop
** iteration or call) and wakes the prompt through the pipe with a 'c'. SIGHUP does the same
** and marks the session over ('h'); SIGWINCH just wakes the prompt ('w') so readline reads the
** new size. Flag and write() are async-signal-safe, and the pipe works whichever thread the
** signal lands on. While code runs, the first Ctrl-C also ends the line the terminal echoed
** "^C" on, so the "interrupted" error starts a line of its own.
*/
static void on_signal(int sig) {
  Repl *R = g_repl;
  if (!R) return;
  int saved = errno;
  char b = 'w';
  if (sig == SIGINT || sig == SIGHUP) {
    if (sig == SIGINT && !R->at_prompt && !R->I->interrupted && write(STDERR_FILENO, "\n", 1) < 0) {}
    if (sig == SIGHUP) R->hangup = 1;
    R->I->interrupted = 1;
    b = sig == SIGINT ? 'c' : 'h';
  }
  if (R->sigpipe[1] >= 0 && write(R->sigpipe[1], &b, 1) < 0) { /* full pipe: already awake */ }
  errno = saved;
}

/* Empties the signal pipe; returns the SIG_* bits of what arrived since the last call. */
static int drain_sigpipe(Repl *R) {
  char buf[64];
  int got = 0;
  ssize_t n;
  if (R->sigpipe[0] >= 0)
    while ((n = read(R->sigpipe[0], buf, sizeof buf)) > 0)
      for (ssize_t i = 0; i < n; i++) got |= buf[i] == 'c' ? SIG_INT : buf[i] == 'h' ? SIG_HUP : SIG_WINCH;
  return got;
}

/* readline's line handler: keeps the line and uninstalls itself, so no prompt is redrawn. */
static void on_line(char *line) {
  g_repl->line = line;
  g_repl->line_done = true;
  rl_callback_handler_remove();
}

/*
** Reads one line with prompt. READ_LINE puts the line (the caller frees it) in *out; READ_EOF
** is Ctrl-D on an empty line or a hangup; READ_INTERRUPT is Ctrl-C, which abandons the line.
*/
static int repl_readline(Repl *R, const char *prompt, char **out) {
  int pending = drain_sigpipe(R);        /* a Ctrl-C that came as code finished is dropped */
  R->line = NULL;
  R->line_done = false;
  *out = NULL;
  if (R->hangup) return READ_EOF;
  rl_eof_found = 0;                       /* else every later line ends with a blank line */
  R->at_prompt = 1;
  rl_callback_handler_install(prompt, on_line);
  if (pending & SIG_WINCH) rl_resize_terminal();
  int why = READ_LINE;
  while (!R->line_done) {
    struct pollfd p[2] = { { STDIN_FILENO, POLLIN, 0 }, { R->sigpipe[0], POLLIN, 0 } };
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      why = READ_EOF;
      break;
    }
    if (p[1].revents & POLLIN) {
      int got = drain_sigpipe(R);
      if (got & SIG_HUP) { why = READ_EOF; break; }
      if (got & SIG_WINCH) rl_resize_terminal();
      if (got & SIG_INT) { why = READ_INTERRUPT; break; }
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) rl_callback_read_char();
  }
  R->at_prompt = 0;
  if (!R->line_done) {
    rl_free_line_state();
    rl_callback_sigcleanup();
    if (why == READ_INTERRUPT) {          /* Ctrl-C: leave the line on screen, marked ^C */
      rl_point = rl_end;
      rl_redisplay();
      rl_echo_signal_char(SIGINT);
      rl_crlf();
      rl_replace_line("", 0);
      rl_on_new_line();
    }
    rl_callback_handler_remove();
    fflush(rl_outstream);
    return why;
  }
  *out = R->line;
  if (R->line) return READ_LINE;
  /* Ctrl-D: with bracketed paste on, readline has already ended the line ("\r\n") */
  const char *bp = rl_variable_value("enable-bracketed-paste");
  if (!bp || strcmp(bp, "on") != 0) rl_crlf();
  fflush(rl_outstream);
  return READ_EOF;
}

/* Adds a chunk (its lines joined with "\n") to the history: one entry per chunk, no repeats. */
static void repl_saveline(const char *chunk) {
  const char *p = chunk;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) return;
  TextBuf t;                     /* a line "#<digit>" would read back as a timestamp: indent it */
  tb_init(&t);
  for (p = chunk; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p + 1) : strlen(p);
    if (p[0] == '#' && isdigit((unsigned char)p[1])) tb_puts(&t, " ");
    tb_putn(&t, p, n);
    p += n;
  }
  HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (!last || strcmp(last->line, t.p) != 0) add_history(t.p);
  tb_free(&t);
}

static const char *history_file(char *buf, size_t n) {
  const char *h = getenv("MLS_HISTFILE");
  if (h && *h) return h;
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  snprintf(buf, n, "%s/.mls_history", home);
  return buf;
}

/* ---- completion ---- */
static bool is_name_char(int c) { return isalnum(c) || c == '_' || c == '.'; }

/* A growing list of malloc'ed candidate strings (readline frees what it is handed). */
typedef struct Cands { char **v; int n, cap; } Cands;

static void cand_add(Cands *c, const char *prefix, size_t plen, const char *name) {
  if (strncmp(name, prefix, plen) != 0) return;
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 64;
    char **v = realloc(c->v, (size_t)c->cap * sizeof *v);
    if (!v) return;
    c->v = v;
  }
  char *s = strdup(name);
  if (s) c->v[c->n++] = s;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
** Turns candidates into readline's match array: [0] the common prefix that replaces the word,
** then the matches, then NULL. Takes the strings; NULL when there are none.
*/
static char **cands_to_matches(Cands *c) {
  if (c->n == 0) { free(c->v); return NULL; }
  qsort(c->v, (size_t)c->n, sizeof *c->v, cmp_str);
  int k = 1;
  for (int i = 1; i < c->n; i++) {
    if (strcmp(c->v[i], c->v[k - 1]) == 0) free(c->v[i]);
    else c->v[k++] = c->v[i];
  }
  c->n = k;
  char **m = malloc((size_t)(c->n + 2) * sizeof *m);
  if (!m) { for (int i = 0; i < c->n; i++) free(c->v[i]); free(c->v); return NULL; }
  if (c->n == 1) {
    m[0] = c->v[0];
    m[1] = NULL;
  } else {
    size_t lcd = strlen(c->v[0]);
    for (int i = 1; i < c->n; i++) {
      size_t j = 0;
      while (j < lcd && c->v[i][j] == c->v[0][j]) j++;
      lcd = j;
    }
    m[0] = strndup(c->v[0], lcd);
    memcpy(m + 1, c->v, (size_t)c->n * sizeof *m);
    m[c->n + 1] = NULL;
  }
  free(c->v);
  return m;
}

/* Looks up a global list by name; NULL when the name is not bound to a list. */
static const List *global_list(Interp *I, const char *name, size_t len) {
  Symbol *s = sym_lookup(&I->syms, name, len);
  return s && s->global.t == VT_LIST ? s->global.u.l : NULL;
}

/*
** The list that "a$b$c" (the text ending at end, just before a '$' or '::') names, looking only
** at globals and list members: completion never runs code. NULL when it is not a list.
*/
static const List *chain_list(Interp *I, const char *line, int end) {
  int b = end;
  while (b > 0 && (is_name_char((unsigned char)line[b - 1]) || line[b - 1] == '$')) b--;
  while (b < end && line[b] == '$') b++;
  int e = b;
  while (e < end && line[e] != '$') e++;
  if (e == b) return NULL;
  const List *l = global_list(I, line + b, (size_t)(e - b));
  while (l && e < end) {
    b = e + 1;
    e = b;
    while (e < end && line[e] != '$') e++;
    Symbol *s = sym_lookup(&I->syms, line + b, (size_t)(e - b));
    int k = s ? list_find(l, s) : -1;
    l = k >= 0 && l->items[k].t == VT_LIST ? l->items[k].u.l : NULL;
  }
  return l;
}

static void add_members(Cands *c, const List *l, const char *text, size_t tlen) {
  if (!l || !l->names) return;
  for (int i = 0; i < l->n; i++)
    if (l->names[i]) cand_add(c, text, tlen, l->names[i]->name);
}

/* readline's word-break hook: inside a string literal only the quotes end the word, so that a
** path ("/etc/ho", "~/data/x", "../runs/a") is completed whole, not from its last '/' (which
** completed "/e" against the working directory). Outside a string: the default breaks. */
static char *string_word_breaks(void) {
  char q = 0;
  for (int i = 0; i < rl_point; i++) {
    char ch = rl_line_buffer[i];
    if (q) {
      if (ch == '\\' && i + 1 < rl_point) i++;
      else if (ch == q) q = 0;
    } else if (ch == '"' || ch == '\'') {
      q = ch;
    } else if (ch == '#') {
      break;                                  /* a comment: no string starts after it */
    }
  }
  return q ? (char *)"\"'" : NULL;
}

/*
** readline's attempted-completion function: file names inside a string literal, list members
** after "name$" or "ns::", else keywords, builtins, globals and stdlib functions.
*/
static char **repl_complete(const char *text, int start, int end) {
  (void)end;
  Repl *R = g_repl;
  Interp *I = R->I;
  rl_attempted_completion_over = 1;        /* never fall back to file names outside strings */
  if (rl_completion_quote_character) return rl_completion_matches(text, rl_filename_completion_function);
  rl_completion_append_character = '\0';
  const char *line = rl_line_buffer;
  size_t tlen = strlen(text);
  Cands c = { NULL, 0, 0 };
  if (start >= 1 && line[start - 1] == '$') {
    add_members(&c, chain_list(I, line, start - 1), text, tlen);
  } else if (start >= 2 && line[start - 1] == ':' && line[start - 2] == ':') {
    int b = start - 2;
    while (b > 0 && is_name_char((unsigned char)line[b - 1])) b--;
    add_members(&c, global_list(I, line + b, (size_t)(start - b)), text, tlen);   /* "ns::": the namespace */
  } else {
    if (isdigit((unsigned char)text[0])) return NULL;       /* a number: nothing to complete */
    for (int i = 0; keywords[i]; i++) cand_add(&c, text, tlen, keywords[i]);
    for (int i = 0; i < builtin_count; i++) cand_add(&c, text, tlen, builtin_table[i].name);
    for (int i = 0; i < R->nlib; i++) cand_add(&c, text, tlen, R->libnames[i]);
    for (uint32_t b = 0; b < I->syms.nbuckets; b++)
      for (Symbol *s = I->syms.buckets[b]; s; s = s->next)
        if (s->global.t != VT_UNBOUND && !sym_is_namespace(s)) cand_add(&c, text, tlen, s->name);
  }
  return cands_to_matches(&c);
}

/* Adds the name of a "name = function" or "name <- function" line to R->libnames. */
static void scan_lib_line(Repl *R, const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  const char *s = p;
  if (!isalpha((unsigned char)*p) && *p != '.' && *p != '_') return;
  while (is_name_char((unsigned char)*p)) p++;
  size_t n = (size_t)(p - s);
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '=' && p[1] != '=') p++;
  else if (p[0] == '<' && p[1] == '-') p += 2;
  else return;
  while (*p == ' ' || *p == '\t') p++;
  if (strncmp(p, "function", 8) != 0 || is_name_char((unsigned char)p[8])) return;
  if (R->nlib == R->caplib) {
    R->caplib = R->caplib ? R->caplib * 2 : 16;
    R->libnames = mem_realloc(R->libnames, (size_t)R->caplib * sizeof *R->libnames);
  }
  R->libnames[R->nlib++] = mem_strndup(s, n);
}

/* Collects the function names of the standard library's *.mls files, for completion. */
static void scan_stdlib(Repl *R) {
  char buf[PATH_MAX];
  const char *dir = interp_stdlib_dir(R->I, buf, sizeof buf);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".mls") != 0) continue;
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    char line[1024];
    while (fgets(line, sizeof line, f)) scan_lib_line(R, line);
    fclose(f);
  }
  closedir(d);
}

/* ---- the loop ---- */
/* True when every line is blank or a comment and the last comment is a "#'" doc line: the doc
** belongs to the definition that follows, so the REPL reads on instead of running nothing. */
static bool awaits_documented(const char *text) {
  bool doc = false;
  for (const char *p = text; *p;) {
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (*p == '\n') { p++; continue; }
    if (!*p) break;
    if (*p != '#') return false;
    doc = p[1] == '\'';
    while (*p && *p != '\n') p++;
  }
  return doc;
}

/* Appends line to chunk, as help("name") when it is "?name", as help.search("word") when it is
** "??word" (REPL syntax, not the language's). */
static void rewrite_help(TextBuf *chunk, const char *line) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (*p != '?') { tb_puts(chunk, line); return; }
  p++;
  bool search = *p == '?';                                   /* ??word: help.search("word") */
  if (search) p++;
  while (*p == ' ' || *p == '\t') p++;
  const char *s = p, *e;
  if (*p == '"' || *p == '\'' || *p == '`') {               /* ?"%*%", ?'for', ?`if` */
    char q = *p++;
    s = p;
    while (*p && *p != q && *p != '\\') p++;
    if (*p != q) { tb_puts(chunk, line); return; }
    e = p++;
  } else if (is_name_char((unsigned char)*p)) {                /* ?rowSums, ?nn::adam, ?for */
    while (*p && (is_name_char((unsigned char)*p) || *p == ':')) p++;
    e = p;
  } else {                                                   /* ?%*%, ?+, ?[ */
    while (*p && *p != ' ' && *p != '\t' && *p != '"') p++;
    e = p;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (*p || e == s) { tb_puts(chunk, line); return; }          /* not "?name": let it fail */
  tb_printf(chunk, search ? "help.search(\"%.*s\")" : "help(\"%.*s\")", (int)(e - s), s);
}

/*
** Reads lines until the chunk parses (or fails with an error other than at_eof), then runs it.
** Returns false on Ctrl-D at the main prompt.
*/
static bool repl_chunk(Repl *R) {
  Interp *I = R->I;
  char *line;
  int why = repl_readline(R, "> ", &line);
  if (why == READ_EOF) return false;
  if (why == READ_INTERRUPT) return true;
  TextBuf chunk, code;           /* chunk: what was typed (history); code: what runs */
  tb_init(&chunk);
  tb_init(&code);
  tb_puts(&chunk, line);
  rewrite_help(&code, line);
  free(line);
  for (;;) {
    int st = -1;
    if (!awaits_documented(code.p)) {
      I->interrupted = 0;
      Source *src = source_new("<stdin>", code.p, code.n);
      st = interp_run_repl_chunk(I, src);
      source_release(src);
      if (st != -1) plot_flush(I);       /* the open figure's file is up to date after each input */
    }
    if (st != -1 || I->quitting) break;
    why = repl_readline(R, "+ ", &line);
    if (why == READ_INTERRUPT) goto done;                  /* Ctrl-C drops the whole chunk */
    if (why == READ_EOF) {                                 /* report what is missing */
      if (!awaits_documented(code.p)) {
        Source *src = source_new("<stdin>", code.p, code.n);
        interp_run_source(I, src, true);
        source_release(src);
      }
      break;
    }
    tb_puts(&chunk, "\n");
    tb_puts(&chunk, line);
    tb_puts(&code, "\n");
    tb_puts(&code, line);
    free(line);
  }
  repl_saveline(chunk.p);
done:
  tb_free(&chunk);
  tb_free(&code);
  return true;
}

int repl_run(Interp *I) {
  Repl R;
  memset(&R, 0, sizeof R);
  R.I = I;
  if (pipe2(R.sigpipe, O_NONBLOCK | O_CLOEXEC) != 0) R.sigpipe[0] = R.sigpipe[1] = -1;
  scan_stdlib(&R);
  g_repl = &R;

  rl_readline_name = "mls";                /* for "$if mls" in ~/.inputrc */
  rl_catch_signals = 0;                    /* SIGINT, SIGWINCH, SIGHUP are ours: on_signal */
  rl_catch_sigwinch = 0;
  rl_attempted_completion_function = repl_complete;
  rl_basic_word_break_characters = word_breaks;
  rl_completer_word_break_characters = word_breaks;
  rl_completer_quote_characters = "\"'";
  rl_completion_word_break_hook = string_word_breaks;
  /* a "#<time>" line before each entry in the file, so that a chunk of several lines reads
  ** back as one entry (see repl_saveline for lines that look like timestamps) */
  history_write_timestamps = 1;
  history_comment_char = '#';
  history_multiline_entries = 1;
  using_history();
  stifle_history(REPL_HISTORY_MAX);
  char hb[PATH_MAX];
  const char *hist = history_file(hb, sizeof hb);
  if (hist) read_history(hist);

  struct sigaction sa, old_int, old_winch, old_hup;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGWINCH, &sa, &old_winch);
  sigaction(SIGHUP, &sa, &old_hup);

  printf("MLS %s -- help() lists builtins, ?name explains one; quit() or Ctrl-D leaves\n", MLS_VERSION);
  fflush(stdout);
  while (repl_chunk(&R) && !I->quitting && !R.hangup) {}
  fflush(stdout);

  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGWINCH, &old_winch, NULL);
  sigaction(SIGHUP, &old_hup, NULL);
  if (hist && write_history(hist) != 0)
    fprintf(stderr, "mls: cannot write the history file %s\n", hist);
  g_repl = NULL;
  if (R.sigpipe[0] >= 0) { close(R.sigpipe[0]); close(R.sigpipe[1]); }
  for (int i = 0; i < R.nlib; i++) mem_free(R.libnames[i]);
  mem_free(R.libnames);
  if (R.hangup) return 128 + SIGHUP;
  return I->quitting ? I->quit_status : 0;
}
