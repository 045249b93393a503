# (a) scalar loop, R peer: the loop inside a function byte-compiled with compiler::cmpfun.
# Prints "result <s>" and "time_ns <ns>" (loop only, measured with Sys.time()).
f <- function() {
  i <- 0
  s <- 0
  while (i < 1e7) { s <- s + i * 0.5; i <- i + 1 }
  s
}
fc <- compiler::cmpfun(f)
t0 <- Sys.time()
s <- fc()
t1 <- Sys.time()
cat(sprintf("result %.17g\n", s))
cat(sprintf("time_ns %.0f\n", as.numeric(difftime(t1, t0, units = "secs")) * 1e9))
