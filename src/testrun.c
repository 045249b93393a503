/*
** testrun.c — golden-file cases, run through the real command line. A file holds cases:
**
**   === name                     starts a case; the program follows
**   --- args: -nvargs n=5        (optional) words after the script name
**   --- stdout                   expected standard output, exactly
**   --- stderr                   expected standard error, exactly (default: empty)
**   --- exit: 1                  expected exit status (default 0)
**   --- file: lib.mls            (optional, repeatable) a file created next to t.mls
**   --- script: t.dml            (optional) the program's own file name (default t.mls): a
**                                name ending in .dml parses with DML's newline rule
**
** Each case is written to t.mls (or its --- script: name) in a fresh temporary directory and
** run there as `mls t.mls ARGS` in a child process, so messages read "t.mls:LINE:COL".
**   --- storage: auto (why)      (optional) the case asserts what only the default storage gives
**                                (memory counts, a sparse matrix's header line): MLS_TEST_FLAGS/
**                                COMPARE's --sparse MODE is left out for it (docs/sparse.md "Tests")
**
** MLS_TEST_WRAP="valgrind -q --error-exitcode=99 ..." runs each case under that command.
** MLS_TEST_FLAGS="--staged" puts those options before t.mls in every case.
** MLS_TEST_COMPARE="--staged" ignores the expected sections: each case runs eagerly and with
** those options, both with --digits 17, and the two must agree: the same exit status and
** standard error, and standard output equal up to numbers, which may differ by a relative
** 1e-12 (LANGUAGE.md §12: staged results equal eager ones up to reassociation).
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "mem.h"
#include "print.h"
#include "testrun.h"

typedef struct Case {
  char name[200];
  int line;
  TextBuf prog, out, err;
  char args[512];
  TextBuf files[8];               /* "--- file: NAME": contents */
  char fnames[8][128];
  int nfiles;
  char script[64];                /* "--- script: NAME", default t.mls */
  int exit_code;
  bool has_err;
  bool storage_auto;              /* "--- storage: auto": run without the flags' --sparse MODE */
} Case;

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = mem_alloc((size_t)len + 1);
  *n = fread(buf, 1, (size_t)len, f);
  buf[*n] = '\0';
  fclose(f);
  return buf;
}

static bool write_file(const char *path, const char *s, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(s, 1, n, f) == n;
  return (fclose(f) == 0) && ok;
}

/* Runs the case in a fresh directory top/N (N = ++*serial); fills got_out/got_err; returns the
** exit status (or -signal). */
static int run_case(const char *exe, const char *top, int *serial, const Case *c, const char *flags, char **got_out,
                    char **got_err) {
  char dir[512], path[1024];
  *got_out = *got_err = NULL;
  snprintf(dir, sizeof dir, "%.400s/%d", top, ++*serial);
  if (mkdir(dir, 0700) != 0) return -1000;
  for (int i = 0; i < c->nfiles; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, c->fnames[i]);
    for (char *q = path + strlen(dir) + 1; *q; q++)        /* make the file's folders */
      if (*q == '/') { *q = '\0'; mkdir(path, 0700); *q = '/'; }
    write_file(path, c->files[i].p, c->files[i].n);
  }
  char fbuf[256];                  /* a storage: auto case: the flags without --sparse MODE */
  const char *sa = flags && c->storage_auto ? strstr(flags, "--sparse ") : NULL;
  if (sa) {
    const char *end = sa + 9;
    while (*end && *end != ' ') end++;
    snprintf(fbuf, sizeof fbuf, "%.*s%.120s", (int)(sa - flags) < 100 ? (int)(sa - flags) : 100, flags, end);
    flags = fbuf;
  }
  const char *script = c->script[0] ? c->script : "t.mls";
  snprintf(path, sizeof path, "%s/%s", dir, script);
  write_file(path, c->prog.p, c->prog.n);
  char outp[1100], errp[1100];
  snprintf(outp, sizeof outp, "%s/stdout", dir);
  snprintf(errp, sizeof errp, "%s/stderr", dir);
  char *argv[64];
  int argc = 0;
  char argbuf[512];
  snprintf(argbuf, sizeof argbuf, "%s", c->args);
  /* (the wrapper's words come first; then the case's own arguments) */
  char wrapbuf[512];
  const char *wrap = getenv("MLS_TEST_WRAP");
  if (wrap && *wrap) {
    snprintf(wrapbuf, sizeof wrapbuf, "%s", wrap);
    for (char *tok = strtok(wrapbuf, " "); tok && argc < 20; tok = strtok(NULL, " ")) argv[argc++] = tok;
  }
  argv[argc++] = (char *)exe;
  char flagbuf[256];                       /* e.g. --staged for every case */
  if (flags && *flags) {
    snprintf(flagbuf, sizeof flagbuf, "%s", flags);
    for (char *tok = strtok(flagbuf, " "); tok && argc < 40; tok = strtok(NULL, " ")) argv[argc++] = tok;
  }
  argv[argc++] = (char *)script;
  for (char *tok = strtok(argbuf, " "); tok && argc < 62; tok = strtok(NULL, " ")) argv[argc++] = tok;
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(127);
    int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(o, 1);
    dup2(e, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  size_t n;
  *got_out = read_file(outp, &n);
  *got_err = read_file(errp, &n);
  if (!*got_out) *got_out = mem_strdup("");
  if (!*got_err) *got_err = mem_strdup("");
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* ASan prints this once when a longjmp unwinds more than 64 MiB of stack (deep recursion
** ending in "stack overflow"); it is the sanitizer's note, not the program's output. */
static void drop_asan_unwind_note(char *s) {
  char *p = strstr(s, "WARNING: ASan is ignoring requested __asan_handle_no_return");
  if (!p) return;
  while (p > s && p[-1] != '\n') p--;
  char *e = p;
  for (int k = 0; k < 3 && *e; k++) {      /* the warning and its two explanation lines */
    char *nl = strchr(e, '\n');
    e = nl ? nl + 1 : e + strlen(e);
  }
  memmove(p, e, strlen(e) + 1);
}

/* Equal but for numbers within a relative 1e-12 (plus 1e-14 absolute, for values that cancel
** to about zero) and the widths of runs of spaces (columns align to the widest number). */
static bool num_start(const char *s) {
  return (*s >= '0' && *s <= '9') || ((*s == '-' || *s == '.') && s[1] >= '0' && s[1] <= '9');
}

bool testrun_same_up_to_rounding(const char *a, const char *b) {
  while (*a && *b) {
    if (*a == ' ' || *b == ' ') {                  /* a matrix column's padding: the printed width */
      const char *a2 = a, *b2 = b;                 /* of its numbers may differ (-4e-18 against 0) */
      while (*a2 == ' ') a2++;
      while (*b2 == ' ') b2++;
      if ((*a == ' ' && *b == ' ') || (num_start(a2) && num_start(b2))) {
        a = a2;
        b = b2;
        continue;
      }
    }
    bool na = (*a >= '0' && *a <= '9') || ((*a == '-' || *a == '.') && a[1] >= '0' && a[1] <= '9');
    bool nb = (*b >= '0' && *b <= '9') || ((*b == '-' || *b == '.') && b[1] >= '0' && b[1] <= '9');
    if (na && nb) {
      char *ea, *eb;
      double x = strtod(a, &ea), y = strtod(b, &eb);
      double tol = 1e-12 * (fabs(x) > fabs(y) ? fabs(x) : fabs(y)) + 1e-14;
      if (!(fabs(x - y) <= tol) && !(x == y)) return false;
      a = ea;
      b = eb;
      continue;
    }
    if (*a != *b) return false;
    a++;
    b++;
  }
  while (*a == ' ' || *a == '\n') a++;
  while (*b == ' ' || *b == '\n') b++;
  return !*a && !*b;
}

/* MLS_TEST_COMPARE: the case eagerly and with flags, both at full precision; true when they agree. */
static bool compare_modes(const char *exe, const char *dir, int *serial, const Case *c, const char *flags, const char *file) {
  char f2[300];
  snprintf(f2, sizeof f2, "--digits 17 %.280s", flags);
  char *o1, *e1, *o2, *e2;
  int s1 = run_case(exe, dir, serial, c, "--digits 17", &o1, &e1);
  int s2 = run_case(exe, dir, serial, c, f2, &o2, &e2);
  drop_asan_unwind_note(e1);
  drop_asan_unwind_note(e2);
  bool ok = s1 == s2 && strcmp(e1, e2) == 0 && testrun_same_up_to_rounding(o1, o2);
  if (!ok) {
    printf("DIFF %s:%d: %s (eager vs %s)\n", file, c->line, c->name, flags);
    if (s1 != s2) printf("  exit %d eagerly, %d with %s\n", s1, s2, flags);
    if (!testrun_same_up_to_rounding(o1, o2)) printf("  eager stdout:\n%s  %s stdout:\n%s", o1, flags, o2);
    if (strcmp(e1, e2)) printf("  eager stderr:\n%s  %s stderr:\n%s", e1, flags, e2);
  }
  mem_free(o1);
  mem_free(e1);
  mem_free(o2);
  mem_free(e2);
  return ok;
}

static void case_init(Case *c) {
  memset(c, 0, sizeof *c);
  tb_init(&c->prog);
  tb_init(&c->out);
  tb_init(&c->err);
}

/* Blank lines before the next "===" only separate cases: drop them from a section. */
static void trim_blank_tail(TextBuf *t) {
  while (t->n >= 2 && t->p[t->n - 1] == '\n' && t->p[t->n - 2] == '\n') t->p[--t->n] = '\0';
}

static void case_free(Case *c) {
  tb_free(&c->prog);
  tb_free(&c->out);
  tb_free(&c->err);
  for (int i = 0; i < c->nfiles; i++) tb_free(&c->files[i]);
}

int testrun_main(int nfiles, char **files) {
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) { fprintf(stderr, "mls: cannot find its own executable\n"); return 2; }
  exe[k] = '\0';
  char dir[] = "/tmp/mls-tests-XXXXXX";
  if (!mkdtemp(dir)) { perror("mls: mkdtemp"); return 2; }
  int pass = 0, fail = 0, serial = 0;     /* (serial: the cases' directories in dir) */
  for (int fi = 0; fi < nfiles; fi++) {
    size_t n;
    char *text = read_file(files[fi], &n);
    if (!text) { fprintf(stderr, "mls: cannot read %s\n", files[fi]); fail++; continue; }
    Case c;
    bool in_case = false;
    TextBuf *sec = NULL;
    int lineno = 0;
    char *p = text;
    for (;;) {
      char *eol = strchr(p, '\n');
      bool last = !eol;
      size_t len = eol ? (size_t)(eol - p) : strlen(p);
      lineno++;
      bool header = len >= 4 && strncmp(p, "=== ", 4) == 0;
      if ((header || (last && len == 0)) && in_case) {
        char *got_out = NULL, *got_err = NULL;
        trim_blank_tail(&c.prog);
        trim_blank_tail(&c.out);
        trim_blank_tail(&c.err);
        const char *cmp = getenv("MLS_TEST_COMPARE");
        if (cmp && *cmp) {
          if (compare_modes(exe, dir, &serial, &c, cmp, files[fi])) pass++;
          else fail++;
          case_free(&c);
          in_case = false;
          goto next;
        }
        int st = run_case(exe, dir, &serial, &c, getenv("MLS_TEST_FLAGS"), &got_out, &got_err);
        if (!got_out) got_out = mem_strdup("");
        if (!got_err) got_err = mem_strdup("");
        drop_asan_unwind_note(got_err);
        bool ok = st == c.exit_code && strcmp(got_out, c.out.p) == 0 && strcmp(got_err, c.err.p) == 0;
        if (ok) pass++;
        else {
          fail++;
          printf("FAIL %s:%d: %s\n", files[fi], c.line, c.name);
          if (st != c.exit_code) printf("  exit %d, want %d\n", st, c.exit_code);
          if (strcmp(got_out, c.out.p)) printf("  stdout:\n%s  want:\n%s", got_out, c.out.p);
          if (strcmp(got_err, c.err.p)) printf("  stderr:\n%s  want:\n%s", got_err, c.err.p);
        }
        mem_free(got_out);
        mem_free(got_err);
        case_free(&c);
        in_case = false;
      }
    next:
      if (header) {
        case_init(&c);
        snprintf(c.name, sizeof c.name, "%.*s", (int)(len - 4), p + 4);
        c.line = lineno;
        in_case = true;
        sec = &c.prog;
      } else if (in_case && len >= 4 && strncmp(p, "--- ", 4) == 0) {
        if (!strncmp(p + 4, "stdout", 6)) sec = &c.out;
        else if (!strncmp(p + 4, "stderr", 6)) sec = &c.err;
        else if (!strncmp(p + 4, "exit:", 5)) { c.exit_code = atoi(p + 9); sec = NULL; }
        else if (!strncmp(p + 4, "storage: auto", 13)) sec = NULL, c.storage_auto = true;
        else if (!strncmp(p + 4, "args:", 5)) { snprintf(c.args, sizeof c.args, "%.*s", (int)(len - 9), p + 9); sec = NULL; }
        else if (!strncmp(p + 4, "script:", 7)) {
          const char *nm = p + 11;
          while (*nm == ' ') nm++;
          snprintf(c.script, sizeof c.script, "%.*s", (int)(len - (size_t)(nm - p)), nm);
          sec = NULL;
        }
        else if (!strncmp(p + 4, "file:", 5) && c.nfiles < 8) {
          const char *nm = p + 9;
          while (*nm == ' ') nm++;
          snprintf(c.fnames[c.nfiles], sizeof c.fnames[0], "%.*s", (int)(len - (size_t)(nm - p)), nm);
          tb_init(&c.files[c.nfiles]);
          sec = &c.files[c.nfiles++];
        }
      } else if (in_case && sec && !(last && len == 0)) {
        tb_putn(sec, p, len);
        tb_puts(sec, "\n");
      }
      if (last) break;
      p = eol + 1;
    }
    mem_free(text);
  }
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "mls: could not remove %s\n", dir);
  printf("%d passed, %d failed\n", pass, fail);
  return fail ? 1 : 0;
}
