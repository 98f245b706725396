set terminal pngcairo size 960,540 noenhanced
set output 'docs/teaching/ex6-dataflow.png'
set title 'AlexNet on one 128x128 array: cycles per layer by dataflow (SCALE-Sim v2 model)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [5000:*]
set ylabel 'cycles (log scale)'
set key top left
set grid ytics
plot 'docs/teaching/ex6-dataflow.dat' using 5:xtic(1) title 'weight-stationary (ws)' lc rgb '#e0b000', \
     '' using 6 title 'output-stationary (os)' lc rgb '#3cb371', \
     '' using 7 title 'input-stationary (is)' lc rgb '#6fa8dc'
