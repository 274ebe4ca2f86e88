# Plot of ferry_it_bench's table (the TSV of --tsv; medians over the rounds):
# handoff costs against the pair's floor, and the ratios against their
# targets (the 1 GiB figures appear as a ratio only: they come from the
# second phase, see bench.c). Usage: gnuplot -e "tsv='IN'; png='OUT'" plot.gp
set terminal pngcairo size 1400,900 font ",10"
set output png
set datafile separator "\t"
set datafile missing "nan"
set multiplot layout 2,1 title "ferry: cross-runtime handoff through the bindings' own APIs, every ordered pair (producer->consumer), one run"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -45 scale 0
set grid ytics
set key outside top center horizontal
set logscale y
set ylabel "ns per operation (log)"
set title "array handoff (1 KiB) and stream round trip per batch vs. the pair's floor (noop(P) + noop(Q) + static C->C), medians"
plot tsv using 3:xtic(1) title "array 1 KiB", \
     '' using 4 title "array floor", \
     '' using 6 title "stream / batch", \
     '' using 7 title "stream floor"
set ylabel "ratio (log)"
set title "ratios: handoff / floor (target <= 1.5) and array 1 GiB / 1 KiB (target <= 1.1)"
plot tsv using 9:xtic(1) title "array / floor", \
     '' using 10 title "stream / floor", \
     '' using 11 title "1 GiB / 1 KiB", \
     1.5 with lines lw 2 dt 2 lc rgb "red" title "1.5", \
     1.1 with lines lw 2 dt 3 lc rgb "black" title "1.1"
unset multiplot
