set terminal pngcairo size 1800,900 noenhanced font ',11'
set datafile missing 'NaN'
set output 'results/epyc-2c/compilers/plots/ratios-w4.png'
set title 'blitz time / peer time at 4 workers: median of the repetition pairs of one run (below 1: blitz is faster)'
set style fill pattern border -1
set boxwidth 0.9
set logscale y
set yrange [0.01:100]
set xrange [-1:92]
set ylabel 'blitz time / peer time (ratio, log scale)'
set xlabel 'workload'
set grid ytics
set key outside right top vertical box
set xtics rotate by 45 right scale 0 ('spawn_many_local' 0.5, 'spawn_many_remote_idle' 3.5, 'spawn_many_remote_busy1' 6.5, 'spawn_many_remote_busy2' 9.5, 'yield_many' 12.5, 'ping_pong' 15.5, 'chained_spawn' 18.5, 'skynet_1m' 21.5, 'fib_30' 24.5, 'mutex' 27.5, 'mutex_contended' 30.5, 'rwlock_read' 33.5, 'rwlock_write' 36.5, 'rwlock_contended' 39.5, 'semaphore' 42.5, 'semaphore_contended' 45.5, 'channel_send' 48.5, 'channel_recv' 51.5, 'channel_roundtrip' 54.5, 'channel_mpmc' 57.5, 'oneshot' 60.5, 'broadcast_4rx' 63.5, 'watch' 66.5, 'once_cell_get' 69.5, 'once_cell_set' 72.5, 'barrier' 75.5, 'notify' 78.5, 'select_ready' 81.5, 'timeout_ready' 84.5, 'timer_insert_cancel' 87.5, 'timer_churn_1m' 90.5)
set label 'not run' at 10, 0.0115 rotate by 90 left font ',8' tc rgb 'gray40'
plot 'results/epyc-2c/compilers/plots/ratios-w4.dat' index 0 using 1:2 with boxes fs pattern 0 title 'vs blitz-baseline', 'results/epyc-2c/compilers/plots/ratios-w4.dat' index 1 using 1:2 with boxes fs pattern 1 title 'vs tokio', 1 with lines lw 2 lc rgb 'black' title 'parity (1x)', 0.5 with lines dt 2 lw 2 lc rgb 'red' title 'target (0.5x)'
unset label
unset logscale y
unset yrange
unset xrange
set xtics auto
unset xlabel
unset ylabel
set output 'results/epyc-2c/compilers/plots/latency-w4.png'
set title 'latency distributions at 4 workers (empirical CDF: the fraction of samples at or below each latency)'
set style data lines
set logscale x
set yrange [0:1]
set xlabel 'latency (microseconds, log scale)'
set ylabel 'fraction of samples'
set grid
set key outside right top vertical box
plot 'results/epyc-2c/compilers/plots/latency-w4.dat' index 0 using 1:2 lw 2 dt 1 title 'wake_latency blitz', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 1 using 1:2 lw 2 dt 2 title 'wake_latency blitz-baseline', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 2 using 1:2 lw 2 dt 3 title 'wake_latency tokio', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 3 using 1:2 lw 2 dt 4 title 'sleep_lateness_idle blitz', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 4 using 1:2 lw 2 dt 5 title 'sleep_lateness_idle blitz-baseline', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 5 using 1:2 lw 2 dt 1 title 'sleep_lateness_idle tokio', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 6 using 1:2 lw 2 dt 2 title 'sleep_lateness_busy blitz', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 7 using 1:2 lw 2 dt 3 title 'sleep_lateness_busy blitz-baseline', 'results/epyc-2c/compilers/plots/latency-w4.dat' index 8 using 1:2 lw 2 dt 4 title 'sleep_lateness_busy tokio'
