# frames_ref.R — prints R's values that tests/dml/frames.test expects (Rscript tests/dml/frames_ref.R).
x <- c("bob", "al", "cy", "bob")
print(as.integer(factor(x, levels = sort(unique(x), method = "radix"))))   # recode: 2 1 3 2
city <- c("NY", "SF", "NY", "LA")
print(unclass(model.matrix(~ city - 1))[, ])                               # dummycode LA NY SF
age <- c(23, 35, 51, 40)
print(cut(age, seq(min(age), max(age), length.out = 4), include.lowest = TRUE, labels = FALSE))   # 1 2 3 2
print(mean(c(1.5, NA, 3, 2), na.rm = TRUE), digits = 15)                   # 2.16666666666667
v <- c(5, 1, 9, 3, 7, 2, 8, 4, 6, 10)
print(cut(v, unique(quantile(v, seq(0, 1, 1 / 4), type = 1)), include.lowest = TRUE, labels = FALSE))
jhash <- function(s) { h <- 0; for (ch in utf8ToInt(s)) h <- (h * 31 + ch) %% 2^32; if (h >= 2^31) h - 2^32 else h }
for (s in c("bob", "al", "cy")) cat(s, abs(jhash(s)) %% 7 + 1, "\n")       # hash K=7: 5 1 6
c1 <- c("b", "a", "b", "c", NA, "b"); c2 <- c("x", NA, "y", "x", "z", NA)
m <- names(which.max(table(c1)))
print(as.integer(factor(ifelse(is.na(c1), m, c1))))                        # most_frequent: 2 1 2 3 2 2
print(as.integer(factor(ifelse(is.na(c2), "x", c2))))                      # constant: 1 1 2 1 3 1
k <- !is.na(c2)
print(as.integer(factor(c1, levels = sort(unique(na.omit(c1)))))[k])       # omit: 2 2 3 NA
print(as.integer(factor(c2[k])))                                           # 1 2 1 3
print(data.frame(a = c(1, 2.5), b = c("x", "yy"), c = c(TRUE, NA)))
print(read.csv(text = 'name,age,city,score\nbob,23,"New York, NY",1.5\nal,35,SF,NA\n"c ""q""",51,NY,3'))
