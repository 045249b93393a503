/* builtins_list.h — the C bodies of the builtins, declared once (grep ORDER BUILTIN). */
BI_DECL(print) BI_DECL(display) BI_DECL(matrix) BI_DECL(seq) BI_DECL(t) BI_DECL(nrow) BI_DECL(ncol)
BI_DECL(length) BI_DECL(reduce) BI_DECL(as_scalar) BI_DECL(as_double) BI_DECL(list)
BI_DECL(names) BI_DECL(names_set) BI_DECL(write_csv) BI_DECL(paste) BI_DECL(toString) BI_DECL(stop) BI_DECL(assert) BI_DECL(time)
BI_DECL(ls) BI_DECL(help) BI_DECL(help_search) BI_DECL(ifdef) BI_DECL(source) BI_DECL(unary) BI_DECL(log)
BI_DECL(minmax) BI_DECL(mean) BI_DECL(cbind) BI_DECL(rbind) BI_DECL(is_na) BI_DECL(as_logical)
BI_DECL(as_integer) BI_DECL(as_matrix) BI_DECL(rand) BI_DECL(read) BI_DECL(write) BI_DECL(exists)
BI_DECL(nnz) BI_DECL(sparsity) BI_DECL(quit) BI_DECL(sprintf) BI_DECL(identity) BI_DECL(system_time) BI_DECL(gc) BI_DECL(typeof) BI_DECL(is_type)
/* builtins_math.c: aggregates and math */
BI_DECL(prod) BI_DECL(var) BI_DECL(sd) BI_DECL(rowMeans) BI_DECL(colMeans) BI_DECL(rowMaxs)
BI_DECL(rowMins) BI_DECL(colMaxs) BI_DECL(colMins) BI_DECL(rowIndexMax) BI_DECL(rowIndexMin)
BI_DECL(cumsum) BI_DECL(cumprod) BI_DECL(softmax) BI_DECL(logsoftmax) BI_DECL(diag)
/* builtins_math.c: DML math and statistics (issue 11) */
BI_DECL(cummax) BI_DECL(cummin) BI_DECL(rowProds) BI_DECL(colProds) BI_DECL(rowVars) BI_DECL(colVars)
BI_DECL(rowSds) BI_DECL(colSds) BI_DECL(moment) BI_DECL(cov) BI_DECL(quantile) BI_DECL(median)
BI_DECL(lower_tri) BI_DECL(upper_tri) BI_DECL(is_inf) BI_DECL(xor) BI_DECL(append) BI_DECL(scale)
BI_DECL(aggregate) BI_DECL(interQuartileMean) BI_DECL(cumsumprod) BI_DECL(rowCumsum) BI_DECL(contains)
/* builtins_dml.c: DML primitives (issue 29) */
BI_DECL(ew2) BI_DECL(round) BI_DECL(unique) BI_DECL(remove) BI_DECL(as_list) BI_DECL(eval) BI_DECL(evalList)
/* builtins_dist.c: probability distributions */
BI_DECL(pnorm) BI_DECL(qnorm) BI_DECL(pexp) BI_DECL(qexp) BI_DECL(pchisq) BI_DECL(qchisq) BI_DECL(pt)
BI_DECL(qt) BI_DECL(pf) BI_DECL(qf) BI_DECL(cdf) BI_DECL(icdf)
/* builtins_data.c: data manipulation and sampling */
BI_DECL(order) BI_DECL(table) BI_DECL(removeEmpty) BI_DECL(replace) BI_DECL(ifelse) BI_DECL(rev)
BI_DECL(sample) BI_DECL(outer)
/* builtins_linalg.c: LAPACK(E), through ops/linalg.c */
BI_DECL(solve) BI_DECL(inv) BI_DECL(det) BI_DECL(trace) BI_DECL(cholesky) BI_DECL(eigen)
BI_DECL(qr) BI_DECL(svd)
/* builtins_nn.c: DML's deep-learning builtins */
BI_DECL(conv2d) BI_DECL(conv2d_backward_data) BI_DECL(conv2d_backward_filter) BI_DECL(max_pool)
BI_DECL(max_pool_backward) BI_DECL(bias_add) BI_DECL(batch_norm2d) BI_DECL(batch_norm2d_backward)
/* builtins_io.c: files and checkpoints */
BI_DECL(save) BI_DECL(load)
/* autodiff.c */
BI_DECL(grad) BI_DECL(value_and_grad) BI_DECL(stop_gradient) BI_DECL(jacobian) BI_DECL(hessian)
BI_DECL(gradcheck) BI_DECL(jvp)
/* autodiff_trace.c */
BI_DECL(trace_grad)
BI_DECL(jit) BI_DECL(explain) BI_DECL(dot)
/* builtins_device.c */
BI_DECL(device) BI_DECL(gpu) BI_DECL(cpu)
/* src/plot/plot_builtins.c: base graphics (issue 13) */
BI_DECL(plot) BI_DECL(lines) BI_DECL(points) BI_DECL(hist) BI_DECL(legend) BI_DECL(title) BI_DECL(dev_off)
BI_DECL(abline) BI_DECL(text) BI_DECL(mtext) BI_DECL(axis) BI_DECL(image) BI_DECL(barplot) BI_DECL(boxplot) BI_DECL(matplot) BI_DECL(par)
/* builtins_r.c: R habits (issue 13) */
BI_DECL(c) BI_DECL(rep) BI_DECL(seq_len) BI_DECL(which) BI_DECL(nchar) BI_DECL(cat) BI_DECL(set_seed)
BI_DECL(progress)
/* frame/: SystemDS frames (issue 29) */
BI_DECL(as_frame) BI_DECL(frame) BI_DECL(colnames) BI_DECL(detectSchema) BI_DECL(applySchema) BI_DECL(map)
BI_DECL(read_csv) BI_DECL(transformencode) BI_DECL(transformapply) BI_DECL(transformdecode) BI_DECL(transformcolmap) BI_DECL(transformmeta)
/* mpi/builtins_mpi.c (issue 14) */
BI_DECL(mpi_rank) BI_DECL(mpi_size) BI_DECL(allreduce) BI_DECL(bcast) BI_DECL(barrier) BI_DECL(grad_allreduce)
/* builtins_rbase.c: the R basics (issue 30) */
BI_DECL(any) BI_DECL(all) BI_DECL(which_max) BI_DECL(which_min) BI_DECL(sort) BI_DECL(paste0)
BI_DECL(rnorm) BI_DECL(runif) BI_DECL(rbinom) BI_DECL(lapply) BI_DECL(sapply) BI_DECL(vapply) BI_DECL(Map)
BI_DECL(Reduce) BI_DECL(Filter) BI_DECL(do_call) BI_DECL(apply) BI_DECL(switch) BI_DECL(tryCatch)
BI_DECL(warning) BI_DECL(signif) BI_DECL(format) BI_DECL(summary) BI_DECL(str_struct) BI_DECL(toupper)
BI_DECL(tolower) BI_DECL(head) BI_DECL(tail) BI_DECL(nchar_list) BI_DECL(substr) BI_DECL(sub) BI_DECL(gsub) BI_DECL(grepl) BI_DECL(strsplit) BI_DECL(stopifnot)
