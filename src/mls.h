/*
** mls.h — definitions every module shares: spans, always-on assertions, version.
** Kept tiny on purpose: a module includes the headers of what it really uses.
*/
#ifndef MLS_H
#define MLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MLS_VERSION "0.1.0"

#define l_noret _Noreturn void

/* A byte range [start, end) in one Source; line/col are computed only when printing. */
typedef struct Span { uint32_t start, end; } Span;

/* R's NA (NA_real_): a NaN whose low word is 1954, as R makes it, so that arithmetic carries it
** (x86 keeps the payload of a NaN operand) and it prints as NA; is.nan(NA) is FALSE, is.na is
** TRUE for both. Every other NaN is NaN. */
static inline double mls_na(void) {
  union { uint64_t u; double d; } v = { 0x7FF80000000007A2ull };
  return v.d;
}
static inline bool mls_is_na(double x) {
  union { double d; uint64_t u; } v = { x };
  return x != x && (uint32_t)v.u == 1954;
}

static inline Span span_join(Span a, Span b) {
  Span s = { a.start < b.start ? a.start : b.start, a.end > b.end ? a.end : b.end };
  return s;
}

/* Internal invariants: always on, abort with file:line (GGML_ASSERT). Never for user mistakes. */
l_noret mls_assert_fail(const char *expr, const char *file, int line);
#define MLS_ASSERT(c) ((c) ? (void)0 : mls_assert_fail(#c, __FILE__, __LINE__))

typedef struct Interp Interp;

#endif
