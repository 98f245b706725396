# The include graph points one way (tests/layers.py): the tree passes, and
# the checker does fail on each kind of wrong include, shown on a copy.
/usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$TPU_ROOT" > "$T/layers.txt" \
  || { cat "$T/layers.txt"; die "include rule broken"; }
mkdir -p "$T/tree"
( cd "$TPU_ROOT" && git ls-files -- '*.c' '*.h' '*.def' 2>/dev/null || find . -name '*.[ch]' ) \
  | while read -r f; do mkdir -p "$T/tree/$(dirname "$f")"; cp "$TPU_ROOT/$f" "$T/tree/$f"; done
/usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree" >/dev/null || die "the copy of the tree should pass"
bad() {  # bad FILE INCLUDE EXPECTED-TEXT: adding the include must be refused
  cp "$T/tree/$1" "$T/keep"
  printf '#include "%s"\n' "$2" >> "$T/tree/$1"
  expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree"
  expect_out_contains "$3"
  cp "$T/keep" "$T/tree/$1"
}
bad mxu/mxu_fast.c sim/sim.h "mxu (floor 1) includes sim/sim.h of sim (floor 2)"
bad base/base.c mxu/mxu.h "base (floor 0) includes mxu/mxu.h"
bad vpu/vpu.c mxu/mxu.h "vpu (floor 1) includes mxu/mxu.h of mxu (floor 1)"
bad viz/viz.c frontend/fe.h "viz (floor 3) includes frontend/fe.h"
bad sim/engine.c cli/cli_int.h "sim (floor 2) includes cli/cli_int.h"
bad cli/cmd_run.c sim/sim_int.h "a private header of sim"
bad frontend/train.c mxu/mxu_int.h "a private header of mxu"
bad tests/check_sim.c sim/engine.c "includes a .c file"
# No function over 120 lines (tests/funclen.py), and the check does fail.
/usr/bin/python3 "$TPU_ROOT/tests/funclen.py" "$TPU_ROOT" > "$T/funclen.txt" \
  || { cat "$T/funclen.txt"; die "a function is over 120 lines"; }
expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/funclen.py" --limit 50 "$T/tree"
expect_out_contains "lines (limit 50)"
