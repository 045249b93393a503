# (b) dense matrix multiply, R peer: C <- A %*% B.
# Usage: Rscript matmul.R N REPS.  Each product is printed as "time_ns <ns>".
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[1])
reps <- as.integer(args[2])
set.seed(42)
A <- matrix(runif(n * n), n, n)
B <- matrix(runif(n * n), n, n)
for (r in seq_len(reps)) {
  t0 <- Sys.time()
  C <- A %*% B
  t1 <- Sys.time()
  cat(sprintf("time_ns %.0f\n", as.numeric(difftime(t1, t0, units = "secs")) * 1e9))
}
cat(sprintf("check %.15g\n", sum(C)))
