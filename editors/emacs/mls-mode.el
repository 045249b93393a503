;;; mls-mode.el --- major mode for MLS and SystemDS DML scripts  -*- lexical-binding: t -*-

;; A small major mode for the MLS matrix language (.mls) and DML (.dml) scripts: syntax
;; highlighting, comments (# and DML's /* */), and indentation by braces and parentheses.
;; Install: put this file in a directory of `load-path' (make install puts it in
;; PREFIX/share/emacs/site-lisp) and add (require 'mls-mode) to your init file.
;; The keywords are those of grammar/lexer.re (tests/editors/check.py checks each is here).

;;; Code:

(defgroup mls nil
  "Editing MLS and DML scripts."
  :group 'languages)

(defcustom mls-indent-offset 2
  "Indentation of one level of braces or parentheses in `mls-mode'."
  :type 'integer
  :group 'mls)

(defconst mls-keywords
  '("if" "else" "while" "for" "parfor" "repeat" "in" "function" "return" "break" "next")
  "The keywords of the MLS lexer.")

(defconst mls-contextual-keywords '("as")
  "Keywords only in context: source(\"f.mls\") as ns.")

(defconst mls-constants '("TRUE" "FALSE" "Inf" "NaN" "NA" "NULL" "pi")
  "The constants: the lexer's TRUE, FALSE, Inf, NaN, NA and NULL, and the name pi.")

(defconst mls-types
  '("matrix" "double" "integer" "boolean" "string" "list" "frame" "unknown"
    "Matrix" "Double" "Integer" "Boolean" "String" "List" "Frame" "Unknown")
  "DML's type names, in lower and capitalised spelling.")

(defconst mls-builtins '("source" "ifdef" "stop" "print" "assert" "help" "grad" "jit")
  "A few builtins shown as such.")

(defvar mls-font-lock-keywords
  `((,(regexp-opt mls-keywords 'symbols) . font-lock-keyword-face)
    (,(concat ")\\s-*" (regexp-opt mls-contextual-keywords 'symbols) "\\s-+[A-Za-z_]")
     1 font-lock-keyword-face)
    (,(regexp-opt mls-constants 'symbols) . font-lock-constant-face)
    (,(regexp-opt mls-types 'symbols) . font-lock-type-face)
    (,(regexp-opt mls-builtins 'symbols) . font-lock-builtin-face)
    ("\\_<\\([A-Za-z_][A-Za-z0-9_.]*\\)\\s-*\\(?:=\\|<-\\)\\s-*function\\_>"
     1 font-lock-function-name-face)
    ("\\_<\\([A-Za-z_][A-Za-z0-9_.]*\\)::" 1 font-lock-preprocessor-face)
    ("\\$[A-Za-z0-9_.]+" . font-lock-variable-name-face)
    ("%\\*%\\|%%\\|%/%" . font-lock-builtin-face))
  "Highlighting in `mls-mode'.")

(defvar mls-mode-syntax-table
  (let ((st (make-syntax-table)))
    ;; # to the end of the line (style b), /* ... */ (style a)
    (modify-syntax-entry ?# "< b" st)
    (modify-syntax-entry ?\n "> b" st)
    (modify-syntax-entry ?/ ". 14" st)
    (modify-syntax-entry ?* ". 23" st)
    (modify-syntax-entry ?\" "\"" st)
    (modify-syntax-entry ?\' "\"" st)
    (modify-syntax-entry ?\\ "\\" st)
    (modify-syntax-entry ?_ "_" st)
    (modify-syntax-entry ?. "_" st)
    (modify-syntax-entry ?$ "'" st)
    (dolist (c '(?+ ?- ?^ ?< ?> ?= ?! ?& ?| ?% ?:))
      (modify-syntax-entry c "." st))
    st)
  "Syntax table of `mls-mode'.")

(defun mls-indent-line ()
  "Indent the current line by the depth of the braces and parentheses around it."
  (interactive)
  (let ((indent
         (save-excursion
           (beginning-of-line)
           (let* ((depth (car (syntax-ppss)))
                  (closing (looking-at "[ \t]*[])}]")))
             (max 0 (* mls-indent-offset (if closing (1- depth) depth)))))))
    (if (<= (current-column) (current-indentation))
        (indent-line-to indent)
      (save-excursion (indent-line-to indent)))))

;;;###autoload
(define-derived-mode mls-mode prog-mode "MLS"
  "Major mode for MLS (.mls) and SystemDS DML (.dml) scripts."
  :syntax-table mls-mode-syntax-table
  (setq-local font-lock-defaults '(mls-font-lock-keywords))
  (setq-local comment-start "# ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(?:#+\\|/\\*+\\)\\s-*")
  (setq-local indent-line-function #'mls-indent-line)
  (setq-local indent-tabs-mode nil))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.\\(mls\\|dml\\)\\'" . mls-mode))

(provide 'mls-mode)
;;; mls-mode.el ends here
