# The HBM bandwidth-vs-transfer-size plot of docs/CHIPS.md, from the CSV
# that `build/release/tests/bench_hbm FILE` writes (make docs-images runs
# both): gnuplot -e "csv='build/hbm.csv'; out='docs/hbm-bandwidth.png'" docs/hbm-bandwidth.gp
set terminal pngcairo size 900,520 font "DejaVu Sans,11"
set output out
set datafile separator ","
set title "Achieved HBM bandwidth per core of a streaming VPU op (timing level)"
set xlabel "transfer size (bytes)"
set ylabel "% of the core's share (chip bandwidth / 2 cores)"
set logscale x 2
set xtics ("4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, "4 MiB" 4194304)
set yrange [0:110]
set key bottom right
set grid
plot csv using ($2==1 && strcol(1) eq "tpu-v2-8" ? $3 : 1/0):5 with linespoints title "tpu-v2-8, 1 core", \
     csv using ($2==8 && strcol(1) eq "tpu-v2-8" ? $3 : 1/0):5 with linespoints title "tpu-v2-8, 8 cores", \
     csv using ($2==1 && strcol(1) eq "tpu-v3-8" ? $3 : 1/0):5 with linespoints title "tpu-v3-8, 1 core", \
     csv using ($2==8 && strcol(1) eq "tpu-v3-8" ? $3 : 1/0):5 with linespoints title "tpu-v3-8, 8 cores", \
     90 with lines dt 2 lc rgb "gray" title "90% goal"
