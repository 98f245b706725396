#!/usr/bin/env bash
# Runs every benchmark binary; each prints its own table. See docs/BENCHMARKS.md.
set -u
echo "# tpusim benchmarks, $(date -u +%Y-%m-%d), $(nproc) host cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
rc=0
for b in $BENCHES; do "$b" || rc=1; done
for s in tests/bench/b_*.sh; do [ -e "$s" ] && { bash "$s" || rc=1; }; done
exit $rc
