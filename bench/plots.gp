# SPDX-License-Identifier: LGPL-2.1-or-later
# Draws make bench's CSV files as PNG images:
#   gnuplot -e "dir='RESULTS'; label='DATE, MACHINE'" bench/plots.gp
# dir holds cycle.csv, throughput.csv and herd.csv; the images go there.
if (!exists("dir")) dir = "."
if (!exists("label")) label = ""
set datafile separator ","
set terminal pngcairo size 800,450 font "DejaVu Sans,10" noenhanced
set grid ytics
set key top left

# --- the uncontended cycle, each locker as a bar --------------------------
set output dir."/cycle.png"
set title "uncontended acquire + release (tmpfs), median us\n".label
set style data histograms
set style fill solid 0.7 border -1
set boxwidth 0.7
set ylabel "microseconds per cycle"
set xtics rotate by -20
set yrange [0:*]
plot dir."/cycle.csv" every ::1 using 2:xtic(1) notitle linecolor rgb "#4477aa"

# --- throughput against processes -----------------------------------------
set output dir."/throughput.png"
set title "contended throughput: shared counter increments per second\n".label
set style data linespoints
set xtics norotate
set logscale x 2
set xlabel "processes"
set ylabel "increments per second"
set key top right
plot dir."/throughput.csv" every ::1 using 1:2 title "bare flock + inode check" lw 2, \
     ""                    every ::1 using 1:3 title "pidlock" lw 2, \
     ""                    every ::1 using 1:4 title "liblockfile (polled 1 ms)" lw 2

# --- herds: latency and CPU against waiters --------------------------------
set output dir."/herd.png"
set terminal pngcairo size 900,420 font "DejaVu Sans,10" noenhanced
set multiplot layout 1,2 title "every release finds N waiters\n".label
set xlabel "waiters"
set key top left
set title "hand-off latency, median"
set ylabel "microseconds"
plot dir."/herd.csv" every ::1 using 2:(strcol(1) eq "bare" ? $4 : 1/0) title "bare flock" lw 2, \
     ""              every ::1 using 2:(strcol(1) eq "blocked" ? $4 : 1/0) title "pidlock blocked" lw 2, \
     ""              every ::1 using 2:(strcol(1) eq "timed" ? $4 : 1/0) title "pidlock timed" lw 2
set title "CPU of all processes per hand-off"
set ylabel "microseconds"
plot dir."/herd.csv" every ::1 using 2:(strcol(1) eq "bare" ? $5 : 1/0) title "bare flock" lw 2, \
     ""              every ::1 using 2:(strcol(1) eq "blocked" ? $5 : 1/0) title "pidlock blocked" lw 2, \
     ""              every ::1 using 2:(strcol(1) eq "timed" ? $5 : 1/0) title "pidlock timed" lw 2
unset multiplot
