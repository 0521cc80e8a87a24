# plot.gp: throughput and latency per configuration from bench/run's
# results.tsv (label, rps, p50_ms, p99_ms; medians).
#
#   gnuplot -e "in='bench/results/results.tsv'; out='bench/results/bench.png'" bench/plot.gp
if (!exists("in"))  in  = 'bench/results/results.tsv'
if (!exists("out")) out = 'bench/results/bench.png'

set terminal pngcairo size 1600,1100 font "sans,10"
set output out
set datafile separator "\t"
set key autotitle columnhead
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set xtics rotate by -40 left nomirror
set bmargin 12
set rmargin 14

set multiplot layout 2,1 title "idp-proxy and shortener benchmark (wrk, loopback, medians)"

set title "Throughput"
set ylabel "requests/s"
set format y "%.0f"
plot in using 2:xtic(1) title "req/s" lc rgb "#3b6ea8"

set title "Latency"
set ylabel "ms (log scale)"
set logscale y
set format y "%g"
plot in using 3:xtic(1) title "p50" lc rgb "#6aa84f", \
     '' using 4 title "p99" lc rgb "#cc4125"
unset multiplot
