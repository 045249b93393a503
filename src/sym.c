/*
** sym.c — the symbol table: a chained hash of interned names (Lua's string table, simplified).
*/
#include <string.h>
#include "mem.h"
#include "sym.h"

static uint32_t hash_str(const char *s, size_t n) {
  uint32_t h = 2166136261u;                      /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

void sym_init(SymTab *t) {
  t->nbuckets = 256;
  t->count = 0;
  t->buckets = mem_calloc(t->nbuckets, sizeof(Symbol *));
}

void sym_free(SymTab *t) {
  for (uint32_t i = 0; i < t->nbuckets; i++) {
    Symbol *s = t->buckets[i];
    while (s) {
      Symbol *nx = s->next;
      val_release(s->global);
      mem_free(s);
      s = nx;
    }
  }
  mem_free(t->buckets);
  t->buckets = NULL;
}

Symbol *sym_lookup(const SymTab *t, const char *s, size_t len) {
  uint32_t h = hash_str(s, len);
  for (Symbol *y = t->buckets[h & (t->nbuckets - 1)]; y; y = y->next)
    if (y->hash == h && y->len == len && memcmp(y->name, s, len) == 0) return y;
  return NULL;
}

static void grow(SymTab *t) {
  uint32_t nb = t->nbuckets * 2;
  Symbol **b = mem_calloc(nb, sizeof(Symbol *));
  for (uint32_t i = 0; i < t->nbuckets; i++) {
    Symbol *s = t->buckets[i];
    while (s) {
      Symbol *nx = s->next;
      s->next = b[s->hash & (nb - 1)];
      b[s->hash & (nb - 1)] = s;
      s = nx;
    }
  }
  mem_free(t->buckets);
  t->buckets = b;
  t->nbuckets = nb;
}

/* Interns the name a (alen bytes) followed by b (blen bytes), with no buffer of its own to free
** when an allocation fails half way (mem.h's handler may longjmp out of mem_alloc). */
static Symbol *intern_parts(SymTab *t, const char *a, size_t alen, const char *b, size_t blen) {
  size_t len = alen + blen;
  uint32_t h = hash_str(a, alen);
  for (size_t i = 0; i < blen; i++) h = (h ^ (uint8_t)b[i]) * 16777619u;   /* (hash_str of a then b) */
  for (Symbol *y = t->buckets[h & (t->nbuckets - 1)]; y; y = y->next)
    if (y->hash == h && y->len == len && memcmp(y->name, a, alen) == 0 && memcmp(y->name + alen, b, blen) == 0) return y;
  if (t->count >= t->nbuckets) grow(t);
  Symbol *y = mem_alloc(sizeof *y + len + 1);
  y->hash = h;
  y->len = len;
  y->global = val_unbound();
  y->bi = NULL;
  memcpy(y->name, a, alen);
  memcpy(y->name + alen, b, blen);
  y->name[len] = '\0';
  y->next = t->buckets[y->hash & (t->nbuckets - 1)];
  t->buckets[y->hash & (t->nbuckets - 1)] = y;
  t->count++;
  return y;
}

Symbol *sym_intern(SymTab *t, const char *s, size_t len) { return intern_parts(t, s, len, "", 0); }

Symbol *sym_namespace(SymTab *t, const Symbol *ns) { return intern_parts(t, ns->name, ns->len, "::", 2); }

bool sym_is_namespace(const Symbol *s) { return s->len > 2 && s->name[s->len - 1] == ':' && s->name[s->len - 2] == ':'; }
