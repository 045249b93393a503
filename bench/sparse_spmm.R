# bench/sparse.sh, part 1, R peer (Matrix package): C <- X %*% W, X a rows x cols sparse
# matrix at density d (Matrix::rsparsematrix: d * rows * cols distinct cells, a dgCMatrix,
# compressed by columns as R stores it), W cols x k dense.
# Usage: Rscript sparse_spmm.R ROWS COLS K D REPS
# One warm-up product, then REPS timed ones ("time_ns <ns>"); the generation ("gen_ns") is
# not timed. Checks: sum(C) and sum(colSums(X) * rowSums(W)); peak RSS ("vmhwm_kb") from
# /proc/self/status at the end.
suppressMessages(library(Matrix))
args <- commandArgs(trailingOnly = TRUE)
rows <- as.integer(args[1]); cols <- as.integer(args[2]); k <- as.integer(args[3])
d <- as.numeric(args[4]); reps <- as.integer(args[5])
ns <- function(t0, t1) as.numeric(difftime(t1, t0, units = "secs")) * 1e9

set.seed(7)
t0 <- Sys.time()
X <- rsparsematrix(rows, cols, density = d, rand.x = runif)
W <- matrix(runif(cols * k), cols, k)
t1 <- Sys.time()
cat(sprintf("gen_ns %.0f\n", ns(t0, t1)))
cat(sprintf("nnz %d\n", length(X@x)))
cat(sprintf("class %s\n", class(X)))

C <- X %*% W                       # warm-up
for (r in seq_len(reps)) {
  t0 <- Sys.time()
  C <- X %*% W
  t1 <- Sys.time()
  cat(sprintf("time_ns %.0f\n", ns(t0, t1)))
}
cat(sprintf("check %.15g\n", sum(C)))
cat(sprintf("ident %.15g\n", sum(colSums(X) * rowSums(W))))
hwm <- grep("^VmHWM:", readLines("/proc/self/status"), value = TRUE)
cat(sprintf("vmhwm_kb %s\n", sub("^VmHWM:[[:space:]]*([0-9]+).*", "\\1", hwm)))
