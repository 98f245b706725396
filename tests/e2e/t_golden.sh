# The golden set (tests/golden/cases.txt): every recorded invocation prints
# the same normalized JSON and writes files with the same sha256 as recorded.
/usr/bin/python3 "$TPU_ROOT/tests/golden/golden.py" "$TPUSIM" check > "$T/golden.txt" \
  || { cat "$T/golden.txt"; die "golden outputs changed (tests/golden/golden.py)"; }
