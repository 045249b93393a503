/*
** ops/rules_undef.h — ends an expansion of ops.def's derivative rules (ew.c's
** reverse and forward rules, autodiff_trace.c's tables): the rule vocabulary of ops.def.
*/
#undef A
#undef B
#undef Y
#undef K
#undef U
#undef BI
#undef D_ONE
#undef D_NEG
#undef D_ZERO
#undef D_MUL
#undef D_NMUL
#undef D_DIV
#undef D_NDIV
#undef D_NONE
