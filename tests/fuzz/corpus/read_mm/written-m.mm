%%MatrixMarket matrix array real general
3 3
1
4
NaN
2.5
0
Inf
-3
1e-300
-Inf
