#!/usr/bin/env bash
# Runs every benchmark binary; each prints its own table. See docs/BENCHMARKS.md.
set -u
echo "# tpusim benchmarks, $(date -u +%Y-%m-%d), $(nproc) host cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
rc=0
for b in $BENCHES; do
  # the visualizer's goal is a real window: under Xvfb when it is installed
  # (make deps installs it), else SDL's dummy driver (say so)
  if [ "$(basename "$b")" = bench_viz ] && command -v xvfb-run >/dev/null; then
    xvfb-run -a -s "-screen 0 1920x1080x24" env -u SDL_VIDEODRIVER "$b" || rc=1
  else
    [ "$(basename "$b")" = bench_viz ] && echo "bench_viz: no xvfb-run: SDL's dummy driver, not a window"
    "$b" || rc=1
  fi
done
for s in tests/bench/b_*.sh; do [ -e "$s" ] && { bash "$s" || rc=1; }; done
exit $rc
