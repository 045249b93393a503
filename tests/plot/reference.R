# reference.R — R's values that tests/unit/test_plot.c checks MLS against (pretty() ticks and
# hist() breaks and counts). Run: Rscript tests/plot/reference.R; the output is pasted there.
p <- function(lo, hi, n = 5, min.n = n %/% 3) {
  v <- pretty(c(lo, hi), n = n, min.n = min.n)
  cat(sprintf("  { %.17g, %.17g, %d, %d, %d, { %s } },\n", lo, hi, n, min.n, length(v),
              paste(sprintf("%.17g", v), collapse = ", ")))
}
cat("/* pretty */\n")
p(0, 1); p(1, 10); p(-0.08, 2.08); p(0.3, 97.1); p(-3.7, 12.2); p(1e-5, 3e-5)
p(123456, 123999); p(-1, -0.5); p(0, 0.04); p(5, 5); p(-2.51, 2.51); p(0.001, 1000)
p(0, 100, 10); p(-2.3, 3.1, 12, 1); p(0.96, 10.44); p(-1.08, 1.08); p(17, 23, 3, 1)
h <- function(x, breaks) {
  r <- if (missing(breaks)) hist(x, plot = FALSE) else hist(x, breaks = breaks, plot = FALSE)
  cat(sprintf("breaks %s\ncounts %s\n", paste(format(r$breaks, digits = 15), collapse = " "),
              paste(r$counts, collapse = " ")))
}
x1 <- c(0.5, 1, 1, 1.5, 2, 2, 2, 2.5, 3, 3.5, 4, 4, 4.2, 5, 7.3, 9.9, 10)
cat("/* hist x1 */\n"); h(x1)
cat("/* hist x1, breaks=c(0, 1, 2, 5, 10) */\n"); h(x1, c(0, 1, 2, 5, 10))
x2 <- (1:50)^1.5 / 10
cat("/* hist x2, breaks=20 */\n"); h(x2, 20)
