/* builtins_list.h — the C bodies of the builtins, declared once (grep ORDER BUILTIN). */
BI_DECL(print) BI_DECL(matrix) BI_DECL(seq) BI_DECL(t) BI_DECL(nrow) BI_DECL(ncol)
BI_DECL(length) BI_DECL(reduce) BI_DECL(as_scalar) BI_DECL(as_double) BI_DECL(list)
BI_DECL(names) BI_DECL(paste) BI_DECL(toString) BI_DECL(stop) BI_DECL(assert) BI_DECL(time)
BI_DECL(ls) BI_DECL(help) BI_DECL(ifdef) BI_DECL(source) BI_DECL(unary) BI_DECL(log)
BI_DECL(minmax) BI_DECL(mean) BI_DECL(cbind) BI_DECL(rbind) BI_DECL(is_na) BI_DECL(as_logical)
BI_DECL(as_integer) BI_DECL(as_matrix) BI_DECL(rand) BI_DECL(read) BI_DECL(write) BI_DECL(exists)
BI_DECL(quit) BI_DECL(sprintf) BI_DECL(identity)
