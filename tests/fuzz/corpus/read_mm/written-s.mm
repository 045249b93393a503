%%MatrixMarket matrix coordinate real general
5 4 2
2 3 7
5 4 -1
