# (a) scalar loop, R peer: the same loop at top level (R's JIT compiles top-level loops
# when R_ENABLE_JIT >= 3, the default).  Prints "result <s>" and "time_ns <ns>".
t0 <- Sys.time()
i <- 0
s <- 0
while (i < 1e7) { s <- s + i * 0.5; i <- i + 1 }
t1 <- Sys.time()
cat(sprintf("result %.17g\n", s))
cat(sprintf("time_ns %.0f\n", as.numeric(difftime(t1, t0, units = "secs")) * 1e9))
