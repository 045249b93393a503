" syntax/mls.vim — Vim syntax highlighting for MLS (.mls) and SystemDS DML (.dml) scripts.
" The keywords are those of grammar/lexer.re (tests/editors/check.py checks every one is here).
if exists("b:current_syntax")
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

" keywords of the lexer
syn keyword mlsConditional if else
syn keyword mlsRepeat      while for parfor repeat in
syn keyword mlsStatement   break next
syn keyword mlsKeyword     function return
syn keyword mlsBoolean     TRUE FALSE
syn keyword mlsConstant    Inf NaN NA NULL
" 'as' is a keyword only in source("f.mls") as ns: after a ')' and before a name
syn match   mlsKeyword     ")\@<=\s*\zs\<as\>\ze\s\+[A-Za-z_]"
" names the language gives a meaning but the lexer reads as identifiers
syn keyword mlsType        matrix double integer boolean string list frame unknown
syn keyword mlsType        Matrix Double Integer Boolean String List Frame Unknown
syn keyword mlsConstant    pi
syn keyword mlsInclude     source setwd
syn keyword mlsFunction    ifdef stop print assert help grad jit

" comments: # to the end of the line, DML's /* ... */, and #' documentation lines
syn keyword mlsTodo        contained TODO FIXME XXX NOTE
syn match   mlsComment     "#.*$" contains=mlsTodo,@Spell
syn match   mlsDocComment  "#'.*$" contains=mlsTodo,@Spell
syn region  mlsComment     start="/\*" end="\*/" contains=mlsTodo,@Spell

" strings, with the escapes \n \t \r \\ \" \'
syn match   mlsEscape      contained "\\[ntr\\\"']"
syn region  mlsString      start=+"+ skip=+\\\\\|\\"+ end=+"+ contains=mlsEscape,@Spell
syn region  mlsString      start=+'+ skip=+\\\\\|\\'+ end=+'+ contains=mlsEscape,@Spell

" numbers: 1, 1.5, .5, 1e-3
syn match   mlsNumber      "\<\d\+\(\.\d*\)\=\([eE][-+]\=\d\+\)\=\>"
syn match   mlsNumber      "\.\d\+\([eE][-+]\=\d\+\)\=\>"

" command-line values $name, $1; operators; namespaces ns::f
syn match   mlsParam       "\$[A-Za-z0-9_.]\+"
syn match   mlsOperator    "%\*%\|%%\|%/%\|<-\|+=\|\*\*\|::\|[-+*/^<>=!&|:]"
syn match   mlsNamespace   "\<[A-Za-z_][A-Za-z0-9_.]*\ze::"
" a definition: name = function(...) or name <- function(...)
syn match   mlsDefinition  "\<[A-Za-z_][A-Za-z0-9_.]*\ze\s*\(=\|<-\)\s*function\>"

hi def link mlsConditional Conditional
hi def link mlsRepeat      Repeat
hi def link mlsStatement   Statement
hi def link mlsKeyword     Keyword
hi def link mlsBoolean     Boolean
hi def link mlsConstant    Constant
hi def link mlsType        Type
hi def link mlsInclude     Include
hi def link mlsFunction    Function
hi def link mlsDefinition  Function
hi def link mlsTodo        Todo
hi def link mlsComment     Comment
hi def link mlsDocComment  SpecialComment
hi def link mlsEscape      SpecialChar
hi def link mlsString      String
hi def link mlsNumber      Number
hi def link mlsParam       Identifier
hi def link mlsOperator    Operator
hi def link mlsNamespace   PreProc

let b:current_syntax = "mls"
let &cpo = s:cpo_save
unlet s:cpo_save
