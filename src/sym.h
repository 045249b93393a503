/*
** sym.h — interned names. A Symbol is unique per spelling, so names compare by pointer.
** A symbol also carries its global binding and builtin, so a global read is one load.
*/
#ifndef MLS_SYM_H
#define MLS_SYM_H

#include "mls.h"
#include "value.h"

struct Builtin;

typedef struct Symbol {
  struct Symbol *next;        /* hash chain */
  uint32_t hash;
  size_t len;
  Value global;               /* the global binding; VT_UNBOUND when none */
  const struct Builtin *bi;   /* the builtin of this name, if any */
  char name[];                /* NUL-terminated */
} Symbol;

typedef struct SymTab {
  Symbol **buckets;
  uint32_t nbuckets, count;
} SymTab;

void sym_init(SymTab *t);
/* Releases every global binding and frees the symbols. */
void sym_free(SymTab *t);
Symbol *sym_intern(SymTab *t, const char *s, size_t len);
Symbol *sym_lookup(const SymTab *t, const char *s, size_t len);
/* Namespaces live apart from variables and functions (LANGUAGE.md §11): the namespace made by
** source(...) as ns is bound to the symbol "ns::", which no name can spell, so it is scoped as a
** variable (a global, or a slot of the file sourced as a namespace) and never hides nor is
** hidden by a variable or function ns. sym_namespace interns "ns::" for ns. */
Symbol *sym_namespace(SymTab *t, const Symbol *ns);
/* Whether s is such a namespace symbol ("ns::"): listings (ls, completion) leave them out. */
bool sym_is_namespace(const Symbol *s);

#endif
