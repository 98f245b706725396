# tpusim sweep --emit parallel, run for real with GNU parallel (--joblog,
# --resume-failed): the merged CSV is the same bytes as a one-process sweep's.
if ! command -v parallel >/dev/null || ! parallel --version 2>/dev/null | grep -q 'GNU parallel'; then
  echo "t_sweep_parallel: SKIP: GNU parallel is not installed (make deps installs the 'parallel' package)"; exit 0
fi
ARGS="train --model mlp --batch 32,64,128 --cores 1,2 --precision bf16,bf16x3 --level timing --data synthetic --steps-per-epoch 2"
expect_status 0 "$TPUSIM" sweep --out one -j 2 $ARGS
expect_status 0 "$TPUSIM" sweep --out par --emit parallel --shards 4 $ARGS
expect_out_contains "4 shards of 12 points"
[ "$(wc -l < par/parallel-jobs.txt)" = 4 ] || die "expected 4 job lines: $(cat par/parallel-jobs.txt)"
expect_status 0 parallel --will-cite -j 2 --joblog par/joblog --resume-failed < par/parallel-jobs.txt
[ "$(grep -c ' sweep --out ' par/joblog)" = 4 ] || die "joblog: $(cat par/joblog)"
expect_status 0 par/parallel-merge.sh
cmp par/results.csv one/results.csv || die "parallel shards merged differ from the one-process sweep"
# --resume-failed: nothing failed, nothing runs again
expect_status 0 parallel --will-cite -j 2 --joblog par/joblog --resume-failed < par/parallel-jobs.txt
[ "$(grep -c ' sweep --out ' par/joblog)" = 4 ] || die "--resume-failed ran finished shards again"
# a shard whose journal was lost is run again by a plain rerun of its line
rm -rf par/shard-2
expect_status 0 bash -c "sed -n 2p par/parallel-jobs.txt | parallel --will-cite"
expect_status 0 "$TPUSIM" sweep merge --out par2 par/shard-1 par/shard-2 par/shard-3 par/shard-4
cmp par2/results.csv one/results.csv || die "rerun shard merged differs"
expect_status 2 "$TPUSIM" sweep --out bad --emit make train --model mlp
expect_err_contains "--emit: expected parallel or slurm"
expect_status 2 "$TPUSIM" sweep --out bad --shards 2 train --model mlp
expect_err_contains "--shards goes with --emit"
