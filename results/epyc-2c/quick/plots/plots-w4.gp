set terminal pngcairo size 1800,900 noenhanced font ',11'
set datafile missing 'NaN'
set output 'results/epyc-2c/quick/plots/ratios-w4.png'
set title 'blitz time / peer time at 4 workers: median of the repetition pairs of one run (below 1: blitz is faster)'
set style fill pattern border -1
set boxwidth 0.9
set logscale y
set yrange [0.01:1000]
set xrange [-1:185]
set ylabel 'blitz time / peer time (ratio, log scale)'
set xlabel 'workload'
set grid ytics
set key outside right top vertical box
set xtics rotate by 45 right scale 0 ('spawn_many_local' 2, 'spawn_many_remote_idle' 8, 'spawn_many_remote_busy1' 14, 'spawn_many_remote_busy2' 20, 'yield_many' 26, 'ping_pong' 32, 'chained_spawn' 38, 'skynet_1m' 44, 'fib_30' 50, 'mutex' 56, 'mutex_contended' 62, 'rwlock_read' 68, 'rwlock_write' 74, 'rwlock_contended' 80, 'semaphore' 86, 'semaphore_contended' 92, 'channel_send' 98, 'channel_recv' 104, 'channel_roundtrip' 110, 'channel_mpmc' 116, 'oneshot' 122, 'broadcast_4rx' 128, 'watch' 134, 'once_cell_get' 140, 'once_cell_set' 146, 'barrier' 152, 'notify' 158, 'select_ready' 164, 'timeout_ready' 170, 'timer_insert_cancel' 176, 'timer_churn_1m' 182)
set label 'not run' at 15, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 18, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 21, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 27, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 32, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 33, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 39, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 44, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 50, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 56, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 57, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 62, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 63, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 68, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 69, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 74, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 75, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 80, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 81, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 86, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 87, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 92, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 93, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 98, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 99, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 104, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 105, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 110, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 111, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 116, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 117, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 122, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 123, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 127, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 128, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 129, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 133, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 134, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 135, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 140, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 141, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 146, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 147, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 151, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 152, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 153, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 157, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 158, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 159, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 163, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 164, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 165, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 169, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 170, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 171, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 176, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 177, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 182, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
set label 'not run' at 183, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
plot 'results/epyc-2c/quick/plots/ratios-w4.dat' index 0 using 1:2 with boxes fs pattern 0 title 'vs tokio', 'results/epyc-2c/quick/plots/ratios-w4.dat' index 1 using 1:2 with boxes fs pattern 1 title 'vs go', 'results/epyc-2c/quick/plots/ratios-w4.dat' index 2 using 1:2 with boxes fs pattern 2 title 'vs asio', 'results/epyc-2c/quick/plots/ratios-w4.dat' index 3 using 1:2 with boxes fs pattern 3 title 'vs tbb', 'results/epyc-2c/quick/plots/ratios-w4.dat' index 4 using 1:2 with boxes fs pattern 4 title 'vs blitz-noprobes', 1 with lines lw 2 lc rgb 'black' title 'parity (1x)', 0.5 with lines dt 2 lw 2 lc rgb 'red' title 'target (0.5x)'
unset label
unset logscale y
unset yrange
unset xrange
set xtics auto
unset xlabel
unset ylabel
set output 'results/epyc-2c/quick/plots/latency-w4.png'
set title 'latency distributions at 4 workers (empirical CDF: the fraction of samples at or below each latency)'
set style data lines
set logscale x
set yrange [0:1]
set xlabel 'latency (microseconds, log scale)'
set ylabel 'fraction of samples'
set grid
set key outside right top vertical box
plot 'results/epyc-2c/quick/plots/latency-w4.dat' index 0 using 1:2 lw 2 dt 1 title 'wake_latency blitz', 'results/epyc-2c/quick/plots/latency-w4.dat' index 1 using 1:2 lw 2 dt 2 title 'wake_latency tokio', 'results/epyc-2c/quick/plots/latency-w4.dat' index 2 using 1:2 lw 2 dt 3 title 'wake_latency go', 'results/epyc-2c/quick/plots/latency-w4.dat' index 3 using 1:2 lw 2 dt 4 title 'wake_latency asio', 'results/epyc-2c/quick/plots/latency-w4.dat' index 4 using 1:2 lw 2 dt 5 title 'wake_latency blitz-noprobes', 'results/epyc-2c/quick/plots/latency-w4.dat' index 5 using 1:2 lw 2 dt 1 title 'sleep_lateness_idle blitz', 'results/epyc-2c/quick/plots/latency-w4.dat' index 6 using 1:2 lw 2 dt 2 title 'sleep_lateness_idle tokio', 'results/epyc-2c/quick/plots/latency-w4.dat' index 7 using 1:2 lw 2 dt 3 title 'sleep_lateness_idle go', 'results/epyc-2c/quick/plots/latency-w4.dat' index 8 using 1:2 lw 2 dt 4 title 'sleep_lateness_idle blitz-noprobes', 'results/epyc-2c/quick/plots/latency-w4.dat' index 9 using 1:2 lw 2 dt 5 title 'sleep_lateness_busy blitz', 'results/epyc-2c/quick/plots/latency-w4.dat' index 10 using 1:2 lw 2 dt 1 title 'sleep_lateness_busy tokio', 'results/epyc-2c/quick/plots/latency-w4.dat' index 11 using 1:2 lw 2 dt 2 title 'sleep_lateness_busy go', 'results/epyc-2c/quick/plots/latency-w4.dat' index 12 using 1:2 lw 2 dt 3 title 'sleep_lateness_busy blitz-noprobes'
