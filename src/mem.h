/*
** mem.h — the allocator everything goes through: counts live bytes and allocations
** (the tests read them to prove copy-on-write copies nothing), enforces --max-memory on
** data buffers, and can fail the Nth allocation on purpose (SQLite's OOM tests).
*/
#ifndef MLS_MEM_H
#define MLS_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Never NULL: on failure the installed handler runs (the interpreter's throws a located
** "out of memory" error, see mem_set_oom_handler); without one, or when it returns, the
** process ends with "mls: out of memory (allocating N bytes)" and status 1. */
void *mem_alloc(size_t n);
void *mem_calloc(size_t n, size_t sz);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
/* NULL on failure, calling no handler (for callers that undo their own work first). */
void *mem_try_alloc(size_t n);
void *mem_try_realloc(void *p, size_t n);   /* NULL: p is unchanged and still owned */
/* Reports a failed allocation of n bytes as mem_alloc does (the handler, else exit), for a
** caller of mem_try_* that has put its state right first. Does not return. */
_Noreturn void mem_oom(size_t n);
/* p (from mem_*) cut down to n bytes, which may move it; p itself when that fails. */
void *mem_shrink(void *p, size_t n);
char *mem_strdup(const char *s);
char *mem_strndup(const char *s, size_t n);

/* Statistics of big data buffers (tensor storage), for tests and ls(). */
typedef struct MemStats {
  uint64_t data_allocs;     /* data buffers handed out since start */
  uint64_t data_bytes;      /* bytes live in data buffers now */
  uint64_t data_peak;       /* peak of data_bytes */
  uint64_t work_bytes;      /* other counted bytes live now: strings, text buffers, workspace */
  uint64_t counted_peak;    /* peak of data_bytes + work_bytes */
  uint64_t blocks;          /* blocks of mem_alloc & co. live now (the OOM sweep's leak check) */
} MemStats;
extern MemStats mem_stats;    /* the one process-wide counter; read-only outside mem.c/cpu.c/tensor.c */

/* --max-memory: the bytes that may be counted at once: matrix data (tensor_new checks a request
** against mem_in_use()), strings and text buffers, and the workspace of the builtins that take
** one (LAPACK, sorts; mem_charge). 0 restores the default, the machine's physical memory. */
void mem_set_limit(uint64_t bytes);
uint64_t mem_limit(void);
bool mem_limit_is_set(void);        /* set by the user (messages then name the option) */
/* Bytes counted now: mem_stats.data_bytes + mem_stats.work_bytes. */
uint64_t mem_in_use(void);
/* True when n more counted bytes would pass the limit. */
bool mem_over_limit(uint64_t n);
/* Counts n bytes of workspace (strings, text buffers, scratch) against the limit: false, and
** nothing counted, when they would pass it. Any thread; mem_uncharge gives them back. */
bool mem_charge(uint64_t n);
void mem_uncharge(uint64_t n);
/* The process-wide bound derived from --max-memory (setrlimit RLIMIT_DATA, docs/robustness.md
** "Memory"): limit is mem_limit(), blas_threads the BLAS pool's size. Returns the bound set, or
** 0 when none was (a sanitizer build, or the call failed). mem_unbound_process lifts it again
** (before CUDA loads: it reserves more address space than any bound could allow). */
uint64_t mem_bound_process(uint64_t limit, int blas_threads);
/* The process's malloc policy, set once at start (main): blocks of 4 MiB and more are mapped
** and unmapped, and up to 64 MiB freed below that stays with the process instead of going back
** to the kernel at each free, so a loop that makes and frees a few MiB per iteration (a
** staged loop's sparse results and scratch) does not fault its pages in again each time. */
void mem_tune_malloc(void);
void mem_unbound_process(void);
uint64_t mem_process_bound(void);   /* the bound in force, 0 when none */
/* The process's peak resident memory (VmHWM of /proc/self/status) in bytes; 0 if unknown. */
uint64_t mem_peak_rss(void);
/* Parses a size as --max-memory takes it: a positive number with an optional K, M, G or T
** suffix (powers of 1024, an optional trailing B or iB). False when malformed or zero. */
bool mem_parse_size(const char *s, uint64_t *out);
/* Writes n as "512 B", "3.0 KiB", "7.6 MiB", "36.5 GiB" into buf. */
const char *mem_format_size(char *buf, size_t bufn, uint64_t n);

/* The handler called when an allocation of n bytes fails (it may longjmp; the interpreter's
** throws a located error). Process-wide like malloc; NULL removes it. Returns the old one. */
typedef void (*MemOomHandler)(void *ud, size_t n);
typedef struct MemOomHook { MemOomHandler fn; void *ud; } MemOomHook;
MemOomHook mem_set_oom_handler(MemOomHook h);

/* Marks the calling thread as one that must not allocate: the CPU kernels' pool threads
** (cpu_par.c) and the Jupyter kernel's heartbeat and control threads. Only the interpreter's
** thread has a failure handler, so an allocation elsewhere could only end the process on
** failure; instead every allocation there is an assertion failure, found by any test that
** takes the path, whether or not memory runs out. */
void mem_forbid_thread(void);

/* Allocation-failure injection (tests; $MLS_FAIL_ALLOC for the command line): counts every
** allocation from now on, and the nth one (1-based) fails as if malloc had returned NULL;
** 0 turns it off. mem_fail_count() is the number counted so far, mem_fail_hit() whether the
** injected failure happened. Data buffers (tensor storage) count too (mem_fail_now). */
void mem_fail_at(uint64_t n);
uint64_t mem_fail_count(void);
bool mem_fail_hit(void);
/* Counts one allocation; true when it is the one to fail (for allocators outside mem.c). */
bool mem_fail_now(void);

#endif
