/*
** mem.c — checked allocation. A failed allocation calls the installed handler, which in the
** interpreter throws a located "out of memory" error (Lua's luaM_error); with no handler the
** process ends with a message. Big tensors are checked against --max-memory first (tensor.c).
*/
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "mem.h"
#include "mls.h"

/* The allocator's state is the process's, like malloc's own (tools/globals_allow.txt): every
** allocation of every thread passes here without a context, the counts are of the process's
** memory, and --max-memory bounds the process (RLIMIT_DATA below). */
MemStats mem_stats;

static struct MemProc {
  uint64_t limit;                      /* --max-memory; 0: the default, physical memory */
  uint64_t phys;                       /* physical memory, a constant of the machine read once */
  uint64_t fail_at, fail_count;        /* allocation-failure injection (mem_fail_at) */
  bool fail_hit;
  struct rlimit data_before;           /* RLIMIT_DATA before mem_bound_process lowered it */
  rlim_t data_bound;                   /* the soft limit it set; 0: none */
} proc;

/* Per thread: only the interpreter's thread has a failure handler (a LAPACK worker its own),
** and the kernels' pool threads must not allocate at all. */
static _Thread_local struct MemThread {
  MemOomHook oom_hook;
  bool forbidden;                      /* mem_forbid_thread */
} this_thread;

static uint64_t phys_bytes(void) {
  if (!proc.phys) {
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    proc.phys = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : (uint64_t)1 << 40;
  }
  return proc.phys;
}

void mem_set_limit(uint64_t bytes) { proc.limit = bytes; }
uint64_t mem_limit(void) { return proc.limit ? proc.limit : phys_bytes(); }
bool mem_limit_is_set(void) { return proc.limit != 0; }

uint64_t mem_in_use(void) {
  return mem_stats.data_bytes + __atomic_load_n(&mem_stats.work_bytes, __ATOMIC_RELAXED);
}

bool mem_over_limit(uint64_t n) {
  uint64_t lim = mem_limit(), used = mem_in_use();
  return used > lim || n > lim - used;
}

static void note_peak(void) {
  uint64_t u = mem_in_use();
  if (u > mem_stats.counted_peak) mem_stats.counted_peak = u;   /* (a statistic: a lost race is harmless) */
}

bool mem_charge(uint64_t n) {
  if (mem_over_limit(n)) return false;
  __atomic_add_fetch(&mem_stats.work_bytes, n, __ATOMIC_RELAXED);
  note_peak();
  return true;
}

void mem_uncharge(uint64_t n) { __atomic_sub_fetch(&mem_stats.work_bytes, n, __ATOMIC_RELAXED); }

/* ---- the process bound ----
** RLIMIT_DATA (private writable memory: the heap, anonymous mappings, thread stacks), not
** RLIMIT_AS: address space also counts code, files mapped read-only and the reservations
** that cost no memory (each malloc arena reserves 64 MiB, CUDA reserves its unified address
** space up front, ASan its shadow), so an address-space bound tight enough to mean anything
** breaks them. The bound is what the process holds when it is set (libraries' data, the
** interpreter's 1 GiB stack reservation, the BLAS threads' stacks), plus the limit, plus
** 256 MiB for each BLAS thread's packing buffer (OpenBLAS maps 32 to 128 MiB per thread on
** first use) and 512 MiB for what is not counted (parsed code, lists, environments, graphs). */
static uint64_t status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t k = strlen(key);
  uint64_t v = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, k) && line[k] == ':') { v = strtoull(line + k + 1, NULL, 10); break; }
  fclose(f);
  return v;
}

uint64_t mem_peak_rss(void) { return status_kib("VmHWM") * 1024; }

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MLS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MLS_SANITIZED 1
#endif

uint64_t mem_bound_process(uint64_t limit, int blas_threads) {
#ifdef MLS_SANITIZED
  (void)limit; (void)blas_threads;
  return 0;                                   /* their shadow memory is private writable too */
#else
  uint64_t now = status_kib("VmData") * 1024;
  if (!now || blas_threads < 1 || limit > UINT64_MAX / 4) return 0;
  uint64_t bound = now + limit + (((uint64_t)blas_threads * 256 + 512) << 20);
  struct rlimit cur;
  if (getrlimit(RLIMIT_DATA, &cur) != 0) return 0;
  if (cur.rlim_cur != RLIM_INFINITY && cur.rlim_cur <= bound) return 0;    /* a tighter one stays */
  if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < bound) return 0;
  struct rlimit nl = { (rlim_t)bound, cur.rlim_max };
  if (setrlimit(RLIMIT_DATA, &nl) != 0) return 0;
  if (!proc.data_bound) proc.data_before = cur;
  proc.data_bound = (rlim_t)bound;
  /* blocks of 4 MiB and more are mapped and given back when freed: glibc would otherwise raise
  ** its threshold after the first such free and carve them from the heap, which keeps what
  ** is freed there and could reach the bound while the counted bytes are low */
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  return bound;
#endif
}

void mem_tune_malloc(void) {
  /* (setting either fixes both: glibc's sliding thresholds would give back what a free at the
  ** heap's top leaves past 2x the largest block freed so far; MLS_MALLOC_TUNE=0 keeps glibc's,
  ** for tests/staging/test_masked_faults.sh to compare) */
  const char *e = getenv("MLS_MALLOC_TUNE");
  if (e && strcmp(e, "0") == 0) return;
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

uint64_t mem_process_bound(void) { return (uint64_t)proc.data_bound; }

void mem_unbound_process(void) {
  struct rlimit cur;
  if (!proc.data_bound || getrlimit(RLIMIT_DATA, &cur) != 0 || cur.rlim_cur != proc.data_bound) return;
  if (setrlimit(RLIMIT_DATA, &proc.data_before) == 0) proc.data_bound = 0;
}

bool mem_parse_size(const char *s, uint64_t *out) {
  char *end;
  if (!s || !*s || *s == '-' || *s == '+' || *s == ' ') return false;
  double v = strtod(s, &end);
  if (end == s || !(v > 0)) return false;
  double mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1024.0; end++; break;
  case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
  case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
  case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: break;
  }
  if (mul > 1 && *end == 'i') end++;
  if (*end == 'b' || *end == 'B') end++;
  if (*end) return false;
  v *= mul;
  if (!(v >= 1) || v >= 18446744073709551616.0) return false;
  *out = (uint64_t)v;
  return true;
}

const char *mem_format_size(char *buf, size_t bufn, uint64_t n) {
  static const char *const units[] = { "KiB", "MiB", "GiB" };
  if (n < 1024) { snprintf(buf, bufn, "%llu B", (unsigned long long)n); return buf; }
  double v = (double)n / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 2) { v /= 1024.0; u++; }
  snprintf(buf, bufn, "%.1f %s", v, units[u]);
  return buf;
}

MemOomHook mem_set_oom_handler(MemOomHook h) {
  MemOomHook old = this_thread.oom_hook;
  this_thread.oom_hook = h;
  return old;
}

void mem_fail_at(uint64_t n) { proc.fail_at = n; proc.fail_count = 0; proc.fail_hit = false; }
uint64_t mem_fail_count(void) { return proc.fail_count; }
bool mem_fail_hit(void) { return proc.fail_hit; }

void mem_forbid_thread(void) { this_thread.forbidden = true; }

bool mem_fail_now(void) {                  /* (every allocation passes here) */
  MLS_ASSERT(!this_thread.forbidden && "an allocation on a thread that must not allocate (mem_forbid_thread)");
  if (!proc.fail_at) return false;
  if (++proc.fail_count != proc.fail_at) return false;
  proc.fail_hit = true;
  return true;
}

_Noreturn void mem_oom(size_t n) {
  if (this_thread.oom_hook.fn) this_thread.oom_hook.fn(this_thread.oom_hook.ud, n);        /* may not return */
  fprintf(stderr, "mls: out of memory (allocating %zu bytes)\n", n);
  exit(1);
}

static void *oom(size_t n) { mem_oom(n); }

/* Counts a block handed out (p != NULL) or taken back; atomic, as frees may come from any thread. */
static void *counted(void *p) {
  if (p) __atomic_add_fetch(&mem_stats.blocks, 1, __ATOMIC_RELAXED);
  return p;
}

void *mem_alloc(size_t n) {
  void *p = mem_fail_now() ? NULL : counted(malloc(n ? n : 1));
  return p ? p : oom(n);
}

void *mem_calloc(size_t n, size_t sz) {
  void *p = mem_fail_now() ? NULL : counted(calloc(n ? n : 1, sz ? sz : 1));
  return p ? p : oom(n * sz);
}

void *mem_realloc(void *p, size_t n) {
  void *q = mem_fail_now() ? NULL : realloc(p, n ? n : 1);
  if (q && !p) counted(q);
  return q ? q : oom(n);
}

void *mem_try_alloc(size_t n) { return mem_fail_now() ? NULL : counted(malloc(n ? n : 1)); }

void *mem_try_realloc(void *p, size_t n) {
  void *q = mem_fail_now() ? NULL : realloc(p, n ? n : 1);
  if (q && !p) counted(q);
  return q;
}

void *mem_shrink(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  return q ? q : p;
}

void mem_free(void *p) {
  if (p) __atomic_sub_fetch(&mem_stats.blocks, 1, __ATOMIC_RELAXED);
  free(p);
}

char *mem_strndup(const char *s, size_t n) {
  char *d = mem_alloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *mem_strdup(const char *s) { return mem_strndup(s, strlen(s)); }
