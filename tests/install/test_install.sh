#!/bin/sh
# test_install.sh — `make install PREFIX=<tmp>` then the installed binary, run from another
# directory with no MLS_PATH, finds its stdlib (../share/mls/stdlib beside bin/, whatever
# PREFIX the binary was built with), and `man -l` formats the installed page. The binary has
# PREFIX compiled in (a copy elsewhere still finds PREFIX's stdlib), the man page names PREFIX's
# paths, docs/ are in share/doc/mls and the editor files where Vim and Emacs look.
set -u
top=$(pwd)
p=$(mktemp -d /tmp/mls-install.XXXXXX)
trap 'rm -rf "$p"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
make -s install PREFIX="$p" >/dev/null || { echo "FAIL make install PREFIX=$p"; exit 1; }
check "binary installed" '[ -x "$p/bin/mls" ]'
out=$(cd / && env -u MLS_PATH "$p/bin/mls" -e 'source("nn.mls") as nn; print(nn::relu([-1, 2]))' 2>&1)
check "installed mls finds stdlib from / (got: $out)" '[ "$out" = "0 2" ]'
ver=$(cd / && "$p/bin/mls" --version 2>&1)
check "mls --version names OpenBLAS (got: $ver)" 'echo "$ver" | grep -q "cpu backend: OpenBLAS"'
page=$(MANPAGER=cat MANWIDTH=80 man -l "$p/share/man/man1/mls.1" 2>&1)
check "man -l shows the installed page" 'echo "$page" | grep -q "interpreter for MLS"'
check "man page documents --staged" 'echo "$page" | grep -q -- "--staged"'
check "man page FILES names PREFIX's stdlib" 'grep -q "^\.I $p/share/mls/stdlib\$" "$p/share/man/man1/mls.1"'
check "man page points to PREFIX/share/doc/mls" 'echo "$page" | grep -q "$p/share/doc/mls/language.md"'
check "no /usr/local left in the installed man page" '! grep -q /usr/local "$p/share/man/man1/mls.1"'
# a copy of the binary with no stdlib near it: the stdlib path compiled in is PREFIX's
q=$(mktemp -d /tmp/mls-bin.XXXXXX)
cp "$p/bin/mls" "$q/mls"
out=$(cd / && env -u MLS_PATH "$q/mls" -e 'source("nn.mls") as nn; print(nn::relu([-1, 2]))' 2>&1)
check "a copy of the binary finds PREFIX's stdlib (got: $out)" '[ "$out" = "0 2" ]'
# the plugins built go to PREFIX/lib/mls, where the copy finds them (docs/architecture.md "Plugins")
for k in plot kernel mpi xsmm; do
  [ -e "$top/build/libmls_$k.so" ] && check "libmls_$k.so installed in PREFIX/lib/mls" 'cmp -s "$top/build/libmls_$k.so" "$p/lib/mls/libmls_$k.so"'
done
if [ -e "$top/build/libmls_xsmm.so" ]; then   # and the copy's products use libxsmm's
  out=$(cd / && "$q/mls" --version 2>&1)
  check "a copy of the binary loads PREFIX/lib/mls/libmls_xsmm.so (got: $out)" 'echo "$out" | grep -q "small products: libxsmm"'
fi
if [ -e "$top/build/libmls_plot.so" ]; then
  out=$(cd "$q" && env -u MLS_PLUGIN_DIR "$q/mls" -e 'plot([1, 2], file="f.png")' 2>&1)
  check "a copy of the binary draws with PREFIX/lib/mls/libmls_plot.so (got: $out)" '[ -z "$out" ] && [ -s "$q/f.png" ]'
fi
rm -rf "$q"
check "docs/ installed in PREFIX/share/doc/mls" 'diff -r "$top/docs" "$p/share/doc/mls" >/dev/null'
for f in syntax/mls.vim ftdetect/mls.vim ftplugin/mls.vim; do
  check "vim file $f installed" 'cmp -s "$top/editors/vim/$f" "$p/share/vim/vimfiles/$f"'
done
check "emacs mode installed" 'cmp -s "$top/editors/emacs/mls-mode.el" "$p/share/emacs/site-lisp/mls-mode.el"'
check "VS Code extension installed" 'diff -r "$top/editors/vscode" "$p/share/mls/editors/vscode" >/dev/null'
ks=$(JUPYTER_PATH="$p/share/jupyter" /usr/bin/python3 -c 'from jupyter_client.kernelspec import KernelSpecManager as M; print(M().get_kernel_spec("mls").argv)' 2>&1)
check "kernelspec installed (got: $ks)" '[ "$ks" = "['"'"'mls'"'"', '"'"'--jupyter-kernel'"'"', '"'"'{connection_file}'"'"']" ]'
cd "$top"
[ $fail = 0 ] && echo "install: all passed"
exit $fail
