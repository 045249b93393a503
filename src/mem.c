/*
** mem.c — checked allocation. Small structures that fail to allocate end the process with a
** message (like Lua's luaM_error at the top level); big tensors are checked before allocating
** and report "out of memory allocating ..." as a runtime error instead (tensor.c).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mem.h"

MemStats mem_stats;

static void *oom(size_t n) {
  fprintf(stderr, "mls: out of memory (allocating %zu bytes)\n", n);
  exit(1);
}

void *mem_alloc(size_t n) {
  void *p = malloc(n ? n : 1);
  return p ? p : oom(n);
}

void *mem_calloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz ? sz : 1);
  return p ? p : oom(n * sz);
}

void *mem_realloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  return q ? q : oom(n);
}

void mem_free(void *p) { free(p); }

char *mem_strndup(const char *s, size_t n) {
  char *d = mem_alloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *mem_strdup(const char *s) { return mem_strndup(s, strlen(s)); }
