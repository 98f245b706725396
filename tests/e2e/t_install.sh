# make install into a temporary DESTDIR: the installed program runs (its
# version is the one of every report and of the .pc file, its man page and
# completion are there, an installed example runs), a ten-line C program
# compiles and links against the installed library through pkg-config, and
# make uninstall leaves no file behind. The Python package is installed
# and imported from there too. Then the same with a PREFIX of its
# own and no DESTDIR, as a user installing into their home would.
D=$T/dest
make -s -C "$TPU_ROOT" MODE="${MODE:-release}" install DESTDIR="$D" PREFIX=/usr/local >install.log 2>&1 \
  || { cat install.log; die "make install failed"; }
P=$D/usr/local
for f in bin/tpusim share/man/man1/tpusim.1 share/bash-completion/completions/tpusim lib/libtpusim.a \
         lib/pkgconfig/tpusim.pc include/tpusim/sim/sim.h include/tpusim/viz/viz.h share/doc/tpusim/LICENSE \
         share/doc/tpusim/examples/train_step.json; do
  [ -s "$P/$f" ] || die "make install did not install $f"
done
v=$(sed -n 's/^#define TPU_VERSION "\(.*\)"/\1/p' "$TPU_ROOT/base/base.h")
expect_status 0 "$P/bin/tpusim" --version
[ "$OUT" = "tpusim $v" ] || die "installed --version says '$OUT', base.h says $v"
expect_status 0 "$P/bin/tpusim" run --chip teach --program "$P/share/doc/tpusim/examples/train_step.json" --json
echo "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["tpusim_version"] == sys.argv[1] and d["cycles"] > 0, d.get("tpusim_version")' "$v" \
  || die "the installed program's report does not carry version $v"
grep -q '^\.TH TPUSIM 1 .*tpusim '"$v" "$P/share/man/man1/tpusim.1" || die "man page header lacks version $v"
grep -q 'COMMAND: VIZ' "$P/share/man/man1/tpusim.1" || die "man page lacks the viz command"
grep -qF -- '\-\-scale' "$P/share/man/man1/tpusim.1" || die "man page is not the --help text (no --scale)"
# completion: the commands and a command's options, from the installed program
out=$(bash -c 'source "$1"; COMP_WORDS=("$2" vi); COMP_CWORD=1; _tpusim; echo "${COMPREPLY[*]}"' _ \
      "$P/share/bash-completion/completions/tpusim" "$P/bin/tpusim")
[ "$out" = viz ] || die "completion of 'vi' gave '$out'"
out=$(bash -c 'source "$1"; COMP_WORDS=("$2" viz --sca); COMP_CWORD=2; _tpusim; echo "${COMPREPLY[*]}"' _ \
      "$P/share/bash-completion/completions/tpusim" "$P/bin/tpusim")
[ "$out" = --scale ] || die "completion of 'viz --sca' gave '$out'"
# values, from the program's own tables (tpusim --values; #32)
comp() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tpusim; echo "${COMPREPLY[*]}"' _ \
      "$P/share/bash-completion/completions/tpusim" "$P/bin/tpusim" "$@"; }
[ "$(comp train --chip tpu-v3-1)" = "tpu-v3-128 tpu-v3-1024" ] || die "completion of --chip tpu-v3-1 gave '$(comp train --chip tpu-v3-1)'"
[ "$(comp train --model resnet)" = "resnet50 resnet152v2" ] || die "completion of --model resnet gave '$(comp train --model resnet)'"
[ "$(comp matmul --precision bf16x)" = "bf16x3 bf16x6" ] || die "completion of --precision"
[ "$(comp matmul --dataflow o)" = "os" ] || die "completion of --dataflow"
[ "$(comp train --level t)" = "tile timing" ] || die "completion of --level"
[ "$(comp train --host c)" = "colab" ] || die "completion of --host"
[ "$(comp train --data cif)" = "cifar10:" ] || die "completion of --data"
# the Python package, in the system python3's site directory under PREFIX
# (one on its sys.path for /usr/local), imported from there and run
site=$(/usr/bin/python3 -c 'import sys; print("lib/python%d.%d/dist-packages" % sys.version_info[:2])')
/usr/bin/python3 -c 'import sys; assert "/usr/local/" + sys.argv[1] in sys.path, sys.path' "$site" \
  || die "/usr/local/$site is not on the system python3's sys.path"
ls "$P/$site"/tpusim/_tpusim*.so >/dev/null 2>&1 && [ -s "$P/$site/tpusim/__init__.py" ] \
  || die "make install did not install the Python package into $site"
pre=; [ "${MODE:-release}" = asan ] && pre="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
out=$(cd / && LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 PYTHONPATH="$P/$site" /usr/bin/python3 -c \
      'import tpusim; r = tpusim.info(chip="teach"); print(tpusim.__file__, tpusim.__version__, r["chip"]["cores"])') \
  || die "the installed package does not import and run"
[ "$out" = "$P/$site/tpusim/__init__.py $v 4" ] || die "the installed package says '$out'"
# a C program against the installed engine, through pkg-config
cat > prog.c <<'C'
#include <stdio.h>
#include <string.h>
#include "sim/sim.h"
int main(void) {
  tpu_chip_config chip;
  char err[256];
  if (tpu_chip_config_load("teach", &chip, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
  printf("%s %s %d\n", tpu_version(), chip.name, chip.cores);
  return strcmp(tpu_version(), TPU_VERSION) != 0;
}
C
san=; [ "${MODE:-release}" = asan ] && san="-fsanitize=address,undefined"
# link_prog PKG_CONFIG_PATH: README's command, and the one without --static
link_prog() {
  [ "$(PKG_CONFIG_PATH=$1 pkg-config --modversion tpusim)" = "$v" ] \
    || die "tpusim.pc in $1 says $(PKG_CONFIG_PATH=$1 pkg-config --modversion tpusim), base.h $v"
  local how
  for how in "--static --libs" "--libs"; do
    rm -f prog
    # shellcheck disable=SC2046,SC2086
    cc -std=c11 $san $(PKG_CONFIG_PATH=$1 pkg-config --cflags tpusim) prog.c -o prog \
      $(PKG_CONFIG_PATH=$1 pkg-config $how tpusim) 2>cc.log \
      || { cat cc.log; die "cannot compile and link a program against $1 (pkg-config $how)"; }
    [ "$(./prog)" = "$v teach 4" ] || die "the linked program printed '$(./prog)'"
  done
}
( export PKG_CONFIG_SYSROOT_DIR=$D; link_prog "$P/lib/pkgconfig" )

# A PREFIX other than the default, with no DESTDIR, after the build above was
# installed with the default: the .pc file names this PREFIX, and README's
# command works against it as it is.
Q=$T/opt/tpusim
make -s -C "$TPU_ROOT" MODE="${MODE:-release}" install PREFIX="$Q" >install2.log 2>&1 \
  || { cat install2.log; die "make install PREFIX=$Q failed"; }
grep -qx "prefix=$Q" "$Q/lib/pkgconfig/tpusim.pc" || die "tpusim.pc under $Q: $(head -1 "$Q/lib/pkgconfig/tpusim.pc")"
link_prog "$Q/lib/pkgconfig"
expect_status 0 "$Q/bin/tpusim" info --chip teach --json
make -s -C "$TPU_ROOT" MODE="${MODE:-release}" uninstall PREFIX="$Q" >uninstall2.log 2>&1 \
  || { cat uninstall2.log; die "make uninstall PREFIX=$Q failed"; }
left=$(find "$Q" -type f -o -type l)
[ -z "$left" ] || die "make uninstall PREFIX=$Q left: $left"

make -s -C "$TPU_ROOT" MODE="${MODE:-release}" uninstall DESTDIR="$D" PREFIX=/usr/local >uninstall.log 2>&1 \
  || { cat uninstall.log; die "make uninstall failed"; }
left=$(find "$D" -type f -o -type l; find "$D" -name '*tpusim*')
[ -z "$left" ] || die "make uninstall left: $left"
