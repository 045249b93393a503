" ftplugin/mls.vim — comments and indentation settings for MLS and DML files.
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1
setlocal commentstring=#\ %s
setlocal comments=:#',:#,s1:/*,mb:*,ex:*/
setlocal shiftwidth=2 softtabstop=2 expandtab
setlocal cindent cinoptions=(0,W2,m1 cinkeys-=0#
let b:undo_ftplugin = "setlocal commentstring< comments< shiftwidth< softtabstop< expandtab< cindent< cinoptions< cinkeys<"
