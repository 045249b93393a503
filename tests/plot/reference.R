# reference.R — R's values that tests/unit/test_plot.c checks MLS against: pretty() ticks, hist()
# breaks and counts, axis() tick labels (format()) and log-axis ticks, boxplot.stats and barplot
# midpoints. Run: Rscript tests/plot/reference.R; the output is pasted there.
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
cat("/* tick labels: R's format() of the ticks, as axis() labels them */\n")
f <- function(v) cat(sprintf("  { %d, { %s }, { %s } },\n", length(v), paste(sprintf("%.17g", v), collapse = ", "),
                               paste(sprintf("\"%s\"", format(v, trim = TRUE)), collapse = ", ")))
f(c(0, 1e-5, 2e-5, 3e-5)); f(seq(1e-5, 3e-5, by = 5e-6)); f(c(0.2, 0.4, 0.6000000000000001, 0.8))
f(c(123400, 123500)); f(c(1e5, 2e5, 3e5)); f(c(-1, -0.5, 0, 0.5, 1)); f(c(0, 20, 40)); f(c(1e15, 2e15))
f(c(0.001, 0.002)); f(c(1, 10, 100, 1000, 10000)); f(c(0, 1e5, 2e5)); f(c(-2e-7, 0, 2e-7)); f(c(1e-120, 1e-110))
cat("/* log axes: axTicks over usr (log10) */\n")
g <- function(lo, hi) { pdf(NULL); plot.new(); plot.window(10^c(lo, hi), c(0, 1), log = "x", xaxs = "i"); t <- axis(1); dev.off()
  t <- t[t >= 10^lo * (1 - 1e-9) & t <= 10^hi * (1 + 1e-9)]
  cat(sprintf("  { %.17g, %.17g, %d, { %s } },\n", lo, hi, length(t), paste(sprintf("%.17g", t), collapse = ", "))) }
g(-0.08, 2.08); g(-0.16, 4.16); g(0.1, 0.9); g(-3.2, 3.2); g(0, 3); g(-20, 20); g(0.5, 1.5); g(2.3, 2.35)
cat("/* boxplot.stats of list(c(1, 2, 3, 4, 100), c(5, 6, 7), c(3, 1, 4, 1, 5, 9, 2, 6)) */\n")
for (x in list(c(1, 2, 3, 4, 100), c(5, 6, 7), c(3, 1, 4, 1, 5, 9, 2, 6))) print(boxplot.stats(x)[c("stats", "out")])
cat("/* barplot midpoints and usr */\n")
pdf(NULL); print(barplot(c(3, 5, -2))); print(par("usr")); m <- matrix(c(1, 2, 3, 4, 5, 6), 2)
print(barplot(m, beside = TRUE)); print(par("usr")); dev.off()
