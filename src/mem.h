/*
** mem.h — the allocator everything goes through: counts live bytes and allocations
** (the tests read them to prove copy-on-write copies nothing) and aborts cleanly on OOM.
*/
#ifndef MLS_MEM_H
#define MLS_MEM_H

#include <stddef.h>
#include <stdint.h>

void *mem_alloc(size_t n);            /* never NULL: exits with a message on OOM */
void *mem_calloc(size_t n, size_t sz);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);
char *mem_strndup(const char *s, size_t n);

/* Statistics of big data buffers (tensor storage), for tests and ls(). */
typedef struct MemStats {
  uint64_t data_allocs;     /* data buffers handed out since start */
  uint64_t data_bytes;      /* bytes live in data buffers now */
  uint64_t data_peak;       /* peak of data_bytes */
} MemStats;
extern MemStats mem_stats;    /* the one process-wide counter; read-only outside mem.c/cpu.c */

#endif
