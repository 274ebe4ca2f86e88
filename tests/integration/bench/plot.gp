# Plot of ferry_it_bench's table (the TSV of --tsv): handoff costs and their
# ratios per ordered pair. Usage: gnuplot -e "tsv='IN'; png='OUT'" plot.gp
set terminal pngcairo size 1400,900 font ",10"
set output png
set datafile separator "\t"
set multiplot layout 2,1 title "ferry: cross-runtime handoff, every ordered pair (producer->consumer), one run"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -45 scale 0
set grid ytics
set key top left
set logscale y
set ylabel "ns per operation (log)"
set title "array handoff and stream round trip (per batch) vs. the raw call floor of the pair"
plot tsv using 2:xtic(1) title "array handoff", \
     '' using 3 title "array floor", \
     '' using 4 title "stream round trip / batch", \
     '' using 5 title "stream floor"
unset logscale y
set logscale y
set ylabel "ratio (log)"
set title "ratios: handoff / floor (target <= 1.5) and lend 1 GiB / 1 KiB (target <= 1.1)"
plot tsv using ($2/$3):xtic(1) title "array / floor", \
     '' using ($4/$5) title "stream / floor", \
     '' using ($7/$6) title "1 GiB / 1 KiB", \
     1.5 with lines lw 2 dt 2 lc rgb "red" title "1.5", \
     1.1 with lines lw 2 dt 3 lc rgb "black" title "1.1"
unset multiplot
