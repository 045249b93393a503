%%MatrixMarket matrix array real general
3 1
1
2
3
