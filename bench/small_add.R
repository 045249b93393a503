# (c) per-operation overhead, R peer: 1e5 x C <- A + B on 4x4 matrices, loops inside
# functions byte-compiled with compiler::cmpfun.  Prints "base_ns" (empty loop) and
# "op_ns" (loop with the addition) for each of 5 rounds.
A <- matrix(as.numeric(1:16), 4, 4)
B <- matrix(as.numeric(1:16), 4, 4) / 16
n <- 100000L
empty <- compiler::cmpfun(function(n) { for (i in 1:n) { }; NULL })
adds <- compiler::cmpfun(function(A, B, n) { for (i in 1:n) { C <- A + B }; C })
ns <- function(a, b) as.numeric(difftime(b, a, units = "secs")) * 1e9
for (round in 1:5) {
  t0 <- Sys.time()
  empty(n)
  t1 <- Sys.time()
  C <- adds(A, B, n)
  t2 <- Sys.time()
  cat(sprintf("base_ns %.0f\nop_ns %.0f\n", ns(t0, t1), ns(t1, t2)))
}
cat(sprintf("check %.15g\n", sum(C)))
