# plot.gnuplot — draws the rd_sweep CSV (see README.md in this directory).
#
#   gnuplot -e "csv='docs/sim/sweep.csv'; out='docs/sim'" tests/sim/plot.gnuplot
#
# Writes four PNGs into `out`, each against N on a log scale, one line per loss rate:
#   agreement.png  time to agreement after a simultaneous join (all alive everywhere, one
#                  checksum); dashed: the ring alone agrees (all N in it, alive or suspect)
#   detection.png  time until every member sees a crashed member dead (median; bars: worst)
#   false_deaths.png  dead events about members that were up, per member per hour (log
#                  scale; a cell without any is drawn on the "none" line)
#   messages.png   UDP packets sent per member per second in steady state
# A cell that did not happen (no agreement within the limit, skipped) has no point. The
# points of each loss rate are nudged sideways a little so that equal values stay visible.

if (!exists("csv")) csv = 'docs/sim/sweep.csv'
if (!exists("out")) out = 'docs/sim'

set datafile separator ","
set datafile columnheaders
# the rows of one loss rate, header kept, so that each rate is one connected line
rows(L) = sprintf("< awk -F, 'NR == 1 || $2 == %s' '%s'", L, csv)
nudge(i) = 1.0 + 0.035 * (i - 3)
set terminal pngcairo size 900,560 enhanced font "DejaVu Sans,11" linewidth 1.5
set logscale x 10
set xrange [7:14000]
set xtics (10, 30, 100, 300, 1000, 3000, 10000)
set xlabel "members (N)"
set grid xtics ytics lc rgb "#dddddd"
set key top left box opaque
set pointsize 1.1

# the loss rates present in the file, and one fixed colour per rate
losses = system(sprintf("awk -F, 'NR > 1 {print $2}' '%s' | sort -un | tr '\\n' ' '", csv))
colour(L) = L == 0 ? "#1b9e77" : L == 5 ? "#d95f02" : L == 10 ? "#7570b3" : \
            L == 20 ? "#e7298a" : L == 30 ? "#66a61e" : "#555555"
color(i) = colour(word(losses, i) + 0)
# an empty field (a skipped cell, a limit reached) is no point, never a zero
num_or_nan(name) = (strcol(name) eq "") ? NaN : column(name)
ms_or_nan(name) = num_or_nan(name) / 1000.0

# ---- time to agreement
set output out . "/agreement.png"
set title "Time to agreement after a simultaneous join through one seed"
set ylabel "seconds (1 gossip round = 0.2 s)"
set yrange [0:*]
set label 1 "solid: every member sees all N alive, one checksum\ndashed: the ring alone (all N in it, alive or suspect)\nno point: not within the limit (--join-max)" at graph 0.2, graph 0.95 left
plot for [i=1:words(losses)] rows(word(losses, i)) \
       using (column("n") * nudge(i)):(ms_or_nan("agree_ms")) \
       with linespoints lw 2 pt 7 lc rgb color(i) title sprintf("%s%% loss", word(losses, i)), \
     for [i=1:words(losses)] rows(word(losses, i)) \
       using (column("n") * nudge(i)):(ms_or_nan("ring_ms")) \
       with linespoints lw 1 dt 2 pt 6 lc rgb color(i) notitle
unset label 1

# ---- crash detection
set output out . "/detection.png"
set title "Crash detection: time until every other member sees it dead"
set ylabel "seconds (median of the samples; bar to the worst)"
set yrange [0:*]
plot for [i=1:words(losses)] rows(word(losses, i)) \
       using (column("n") * nudge(i)):(ms_or_nan("detect_ms")):(ms_or_nan("detect_ms")):(ms_or_nan("detect_max_ms")) \
       with yerrorlines lw 2 pt 7 lc rgb color(i) title sprintf("%s%% loss", word(losses, i))

# ---- false positives
set output out . "/false_deaths.png"
set title "False deaths: 'dead' events about members that were up"
# log scale, so that rare false deaths show next to frequent ones; none is drawn at "none"
set ylabel "events per member per hour (log)"
set logscale y 10
set yrange [0.007:100]
set ytics ("none" 0.01, "0.1" 0.1, "1" 1, "10" 10, "100" 100)
atleast(v) = v != v ? NaN : v > 0.01 ? v : 0.01
plot for [i=1:words(losses)] rows(word(losses, i)) \
       using (column("n") * nudge(i)):(atleast(num_or_nan("fp_per_member_hour"))) \
       with linespoints lw 2 pt 7 lc rgb color(i) title sprintf("%s%% loss", word(losses, i))

unset logscale y
set ytics autofreq

# ---- messages
set output out . "/messages.png"
set title "Steady state: UDP packets sent per member per second"
set ylabel "packets / member / s"
set yrange [0:*]
plot for [i=1:words(losses)] rows(word(losses, i)) \
       using (column("n") * nudge(i)):(num_or_nan("msgs_per_member_s")) \
       with linespoints lw 2 pt 7 lc rgb color(i) title sprintf("%s%% loss", word(losses, i))
