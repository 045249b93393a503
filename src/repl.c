/*
** repl.c — the REPL. Readline sits behind repl_readline/repl_saveline (lua.c's
** lua_readline/lua_saveline). A chunk is run when it parses; when the parser reports the end
** of input it reads another line with "+ ", joins with "\n" and tries again.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <readline/history.h>
#include <readline/readline.h>
#include "mem.h"
#include "print.h"
#include "repl.h"

static Interp *g_repl;   /* only for the SIGINT handler, which may only set a flag */

static void on_sigint(int sig) {
  (void)sig;
  if (g_repl) g_repl->interrupted = 1;
}

static char *repl_readline(const char *prompt) { return readline(prompt); }
static void repl_saveline(const char *line) { if (*line) add_history(line); }

static const char *history_file(char *buf, size_t n) {
  const char *h = getenv("MLS_HISTFILE");
  if (h && *h) return h;
  const char *home = getenv("HOME");
  if (!home) return NULL;
  snprintf(buf, n, "%s/.mls_history", home);
  return buf;
}

int repl_run(Interp *I) {
  char hb[4096];
  const char *hist = history_file(hb, sizeof hb);
  if (hist) read_history(hist);
  g_repl = I;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  printf("MLS %s -- type help() for builtins, quit() or Ctrl-D to leave\n", MLS_VERSION);
  int status = 0;
  for (;;) {
    char *line = repl_readline("> ");
    if (!line) { putchar('\n'); break; }
    TextBuf chunk;
    tb_init(&chunk);
    tb_puts(&chunk, line);
    free(line);
    for (;;) {
      I->interrupted = 0;
      Source *src = source_new("<stdin>", chunk.p, chunk.n);
      int st = interp_run_repl_chunk(I, src);
      source_release(src);
      if (st != -1 || I->quitting) break;
      char *more = repl_readline("+ ");
      if (!more) break;
      tb_puts(&chunk, "\n");
      tb_puts(&chunk, more);
      free(more);
    }
    repl_saveline(chunk.p);
    tb_free(&chunk);
    if (I->quitting) { status = I->quit_status; break; }
  }
  if (hist) write_history(hist);
  g_repl = NULL;
  return status;
}
