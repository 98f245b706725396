# Outputs (issue #18): every output goes through tpu_write_atomic. A regular
# file or a new path is written whole or not at all; a symlink is followed
# (the link stays, its target gets the bytes); a device or FIFO is written
# directly and its errors reported. Output that cannot be written is exit 1
# with the path and the reason, and nothing partial or empty is left behind.
TRAIN="train --model mlp --data synthetic --synthetic-n 256 --batch 64 --epochs 1"
GEMM="matmul --m 8 --n 8 --k 8 --seed 3"
CORES="matmul --m 64 --n 64 --k 64 --cores 2"
VIZ="viz --chip teach --m 40 --n 12 --k 20 --headless"
# no_leftovers DIR: no temporary or partial file in DIR.
no_leftovers() { ! ls -a "$1" | grep -q '\.tmp' || die "temporary file left in $1: $(ls -a "$1")"; }

# The reference bytes, written to plain new files.
mkdir ref
expect_status 0 "$TPUSIM" $TRAIN --csv ref/s.csv --trace ref/t.json --checkpoint ref
expect_status 0 "$TPUSIM" $GEMM --out ref/c.npy
expect_status 0 "$TPUSIM" $CORES --trace ref/m.json
expect_status 0 "$TPUSIM" $VIZ --frames 1 --out ref/fr
for f in s.csv t.json checkpoint.bin c.npy m.json fr/frame_000000.png; do [ -s ref/$f ] || die "ref/$f empty"; done

# A private full device (major 1, minor 7): ENOSPC on every write.
if mknod "$T/full" c 1 7 2>/dev/null; then
  check_full() {   # check_full FLAG: the last run failed on $T/full and left it a device
    expect_err_contains "$1"; expect_err_contains "No space left on device"
    [ -c "$T/full" ] || die "$1: the device node was replaced"
  }
  expect_status 1 "$TPUSIM" $TRAIN --csv "$T/full";   check_full "--csv $T/full"
  expect_status 1 "$TPUSIM" $TRAIN --trace "$T/full"; check_full "--trace $T/full"
  expect_status 1 "$TPUSIM" $GEMM --out "$T/full";    check_full "--out $T/full"
  expect_status 1 "$TPUSIM" $CORES --trace "$T/full"; check_full "--trace $T/full"
  expect_status 1 "$TPUSIM" $VIZ --png "$T/full";     check_full "$T/full"
  expect_status 1 "$TPUSIM" $VIZ --frames 2 --gif "$T/full"; check_full "$T/full"
  # through symlinks: a viz frame and a checkpoint that point at the device
  mkdir fr ck
  ln -s ../full fr/frame_000000.png
  expect_status 1 "$TPUSIM" $VIZ --frames 1 --out fr; check_full "fr/frame_000000.png"
  [ -L fr/frame_000000.png ] || die "the frame's symlink was replaced"
  ln -s ../full ck/checkpoint.bin
  expect_status 1 "$TPUSIM" $TRAIN --checkpoint ck;   check_full "ck/checkpoint.bin"
  [ -L ck/checkpoint.bin ] || die "the checkpoint's symlink was replaced"
  no_leftovers "$T"; no_leftovers fr; no_leftovers ck
  rm -rf fr ck
else
  echo "t_outputs: skipped the full-device cases: mknod not permitted" >&2
fi

# A private null device (1, 3), or the FIFO below when mknod is refused:
# written directly, success, the node stays.
if mknod "$T/null" c 1 3 2>/dev/null; then
  expect_status 0 "$TPUSIM" $TRAIN --csv "$T/null" --trace "$T/null"
  expect_status 0 "$TPUSIM" $GEMM --out "$T/null"
  [ -c "$T/null" ] || die "the null device was replaced"
fi

# A FIFO gets the bytes of a regular file and stays a FIFO.
mkfifo pipe
for run in "$TRAIN --csv pipe:s.csv" "$GEMM --out pipe:c.npy" "$CORES --trace pipe:m.json"; do
  cmd=${run%:*}; ref=${run##*:}
  cat pipe > got &
  expect_status 0 "$TPUSIM" $cmd
  wait $!
  [ -p pipe ] || die "the FIFO was replaced ($cmd)"
  cmp -s got ref/$ref || die "the FIFO got other bytes than ref/$ref ($cmd)"
done

# Symlinks: the link stays, its target (in another directory, relative
# or absolute, existing or not yet) gets the content.
mkdir -p tgt links
echo old > tgt/s.csv
ln -s ../tgt/s.csv links/s.csv              # relative, existing target
ln -s "$T/tgt/c.npy" links/c.npy            # absolute, new target
ln -s ../tgt/ck.bin links/ck; mkdir ckl; ln -s ../tgt/ck.bin ckl/checkpoint.bin
ln -s ../tgt/f.png links/f0; mkdir frl; ln -s ../tgt/f.png frl/frame_000000.png
expect_status 0 "$TPUSIM" $TRAIN --csv links/s.csv --checkpoint ckl
expect_status 0 "$TPUSIM" $GEMM --out links/c.npy
expect_status 0 "$TPUSIM" $VIZ --frames 1 --out frl
for l in links/s.csv links/c.npy ckl/checkpoint.bin frl/frame_000000.png; do [ -L $l ] || die "$l is no longer a symlink"; done
cmp -s tgt/s.csv ref/s.csv || die "the symlink's target lacks the CSV"
cmp -s tgt/c.npy ref/c.npy || die "the symlink's target lacks the .npy"
cmp -s tgt/ck.bin ref/checkpoint.bin || die "the symlink's target lacks the checkpoint"
cmp -s tgt/f.png ref/fr/frame_000000.png || die "the symlink's target lacks the frame"
no_leftovers tgt; no_leftovers links

# Cannot write: exit 1 with the path and the reason, nothing left behind.
check_fail() {   # check_fail PATH: the last run failed on PATH and left nothing
  expect_err_contains "$1"; expect_err_contains "No such file or directory"
  [ ! -e "$1" ] || die "$1 was left behind"
}
expect_status 1 "$TPUSIM" $TRAIN --csv no/dir/s.csv;   check_fail no/dir/s.csv
expect_status 1 "$TPUSIM" $TRAIN --trace no/dir/t.json; check_fail no/dir/t.json
expect_status 1 "$TPUSIM" $GEMM --out no/dir/c.npy;    check_fail no/dir/c.npy
expect_status 1 "$TPUSIM" $CORES --trace no/dir/m.json; check_fail no/dir/m.json
expect_status 1 "$TPUSIM" $VIZ --png no/dir/f.png;     check_fail no/dir/f.png
expect_status 1 "$TPUSIM" $TRAIN --checkpoint no/dir;  check_fail no/dir
expect_status 1 "$TPUSIM" $TRAIN --csv ref;            expect_err_contains "--csv ref: cannot write: Is a directory"
ln -s nowhere/x.csv dangling
expect_status 1 "$TPUSIM" $TRAIN --csv dangling;       expect_err_contains "No such file or directory"
[ -L dangling ] || die "the dangling symlink was replaced"
: > afile
expect_status 1 "$TPUSIM" $VIZ --frames 1 --out afile; expect_err_contains "--out afile: cannot write: not a directory"
no_leftovers "$T"
