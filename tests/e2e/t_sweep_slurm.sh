# tpusim sweep --emit slurm, run for real on a single-node Slurm cluster the
# test starts itself (tests/e2e/slurm_cluster.sh) and stops on any exit: the
# job array over the shards, then the dependent merge job; the merged CSV is
# the same bytes as a one-process sweep's.
for c in slurmctld slurmd sbatch squeue scancel sinfo; do
  command -v $c >/dev/null || { echo "t_sweep_slurm: SKIP: $c is not installed (make deps installs slurmctld, slurmd and slurm-client)"; exit 0; }
done
. "$(dirname "$(readlink -f "$1")")/slurm_cluster.sh"
ARGS="train --model mlp --batch 32,64,128 --cores 1,2 --level timing --data synthetic --steps-per-epoch 2"
expect_status 0 "$TPUSIM" sweep --out one -j 2 $ARGS
expect_status 0 "$TPUSIM" sweep --out slu --emit slurm --shards 3 $ARGS
expect_out_contains "--array=1-3 over 6 points"
grep -q '^#SBATCH --array=1-3$' slu/slurm-array.sh || die "no job array: $(cat slu/slurm-array.sh)"
slurm_start || die "could not start the test's Slurm cluster"
expect_status 0 slu/slurm-submit.sh
read -r array merge <<<"$OUT"
[ -n "$merge" ] || die "slurm-submit.sh printed '$OUT'"
slurm_wait "$array" "$merge" || die "the jobs did not finish"
ls slu/slurm-*_1.out slu/slurm-*_2.out slu/slurm-*_3.out >/dev/null || die "no output per array task: $(ls slu)"
[ -f slu/results.csv ] || die "the merge job wrote no results.csv: $(cat slu/slurm-merge-*.out 2>/dev/null; tail "$SD"/*.log)"
cmp slu/results.csv one/results.csv || die "Slurm shards merged differ from the one-process sweep"
grep -q "6 points from 3 shard directories" slu/slurm-merge-*.out || die "merge output: $(cat slu/slurm-merge-*.out)"
