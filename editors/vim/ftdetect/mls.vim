" ftdetect/mls.vim — .mls and .dml files are MLS (DML is read by the same interpreter).
autocmd BufRead,BufNewFile *.mls,*.dml setfiletype mls
