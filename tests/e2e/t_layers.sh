# The includes are the module table of docs/ARCHITECTURE.md (tests/layers.py):
# the tree passes, and the checker does fail on each kind of wrong include
# and on a table that is not the real picture, shown on a copy.
/usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$TPU_ROOT" > "$T/layers.txt" \
  || { cat "$T/layers.txt"; die "include rule broken"; }
mkdir -p "$T/tree"
( cd "$TPU_ROOT" && git ls-files -- '*.c' '*.h' '*.def' docs/ARCHITECTURE.md 2>/dev/null || find . -name '*.[ch]' ) \
  | while read -r f; do mkdir -p "$T/tree/$(dirname "$f")"; cp "$TPU_ROOT/$f" "$T/tree/$f"; done
/usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree" >/dev/null || die "the copy of the tree should pass"
bad() {  # bad FILE INCLUDE EXPECTED-TEXT: adding the include must be refused
  cp "$T/tree/$1" "$T/keep"
  printf '#include "%s"\n' "$2" >> "$T/tree/$1"
  expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree"
  expect_out_contains "$3"
  cp "$T/keep" "$T/tree/$1"
}
bad mxu/mxu_fast.c sim/sim.h "mxu includes sim/sim.h of sim, not a module its row lists (base)"
bad base/base.c mxu/mxu.h "base includes mxu/mxu.h of mxu, not a module its row lists (none)"
bad vpu/vpu.c mxu/mxu.h "vpu includes mxu/mxu.h of mxu, not a module its row lists (base)"
bad viz/viz.c frontend/fe.h "viz includes frontend/fe.h of frontend, not a module its row lists (sim)"
bad sim/engine.c cli/cli_int.h "sim includes cli/cli_int.h of cli, not a module its row lists"
bad sweep/sweep_run.c sim/sim.h "sweep includes sim/sim.h of sim"
bad cli/cmd_run.c sim/sim_int.h "a private header of sim"
bad frontend/train.c mxu/mxu_int.h "a private header of mxu"
bad tests/check_sim.c sim/engine.c "includes a .c file"
# the table itself: an arrow no include draws, a cycle, a folder without a row
D=$T/tree/docs/ARCHITECTURE.md
cp "$D" "$T/keep"
sed -i 's/^| `viz\/` | `viz\/viz.h` | `sim\/` |/| `viz\/` | `viz\/viz.h` | `sim\/`, `datafeed\/` |/' "$D"
expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree"
expect_out_contains "viz's row lists datafeed, but no file of viz includes it"
cp "$T/keep" "$D"
sed -i 's/^| `base\/` | `base\/base.h` | |/| `base\/` | `base\/base.h` | `cli\/` |/' "$D"
expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree"
expect_out_contains "the module table has a cycle: base -> cli"
cp "$T/keep" "$D"
mkdir -p "$T/tree/newmod" && echo 'int x;' > "$T/tree/newmod/x.c"
expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree"
expect_out_contains "newmod/: C sources in a folder the module table has no row for"
rm -r "$T/tree/newmod"
/usr/bin/python3 "$TPU_ROOT/tests/layers.py" "$T/tree" >/dev/null || die "the restored copy should pass"
# No function over 120 lines (tests/funclen.py), and the check does fail.
/usr/bin/python3 "$TPU_ROOT/tests/funclen.py" "$TPU_ROOT" > "$T/funclen.txt" \
  || { cat "$T/funclen.txt"; die "a function is over 120 lines"; }
expect_status 1 /usr/bin/python3 "$TPU_ROOT/tests/funclen.py" --limit 50 "$T/tree"
expect_out_contains "lines (limit 50)"
