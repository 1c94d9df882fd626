set terminal pngcairo size 1800,800 noenhanced
set datafile missing 'NaN'
set output 'results/history/xeon-2c-kvm/quick/plots/ratios-w4.png'
set title 'blitz time / peer time, 4 workers (median of the pairs of one run; below 1: blitz faster)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.01:100]
set xtics rotate by 45 right scale 0
set key top left
set grid ytics
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
set arrow 2 from graph 0, first 0.5 to graph 1, first 0.5 nohead dt 2 lc rgb 'red'
plot 'results/history/xeon-2c-kvm/quick/plots/ratios-w4.dat' using 2:xtic(1) title columnheader, 'results/history/xeon-2c-kvm/quick/plots/ratios-w4.dat' using 3:xtic(1) title columnheader, 'results/history/xeon-2c-kvm/quick/plots/ratios-w4.dat' using 4:xtic(1) title columnheader, 'results/history/xeon-2c-kvm/quick/plots/ratios-w4.dat' using 5:xtic(1) title columnheader, 'results/history/xeon-2c-kvm/quick/plots/ratios-w4.dat' using 6:xtic(1) title columnheader
unset arrow 1
unset arrow 2
unset logscale y
unset yrange
unset xtics
set xtics
set output 'results/history/xeon-2c-kvm/quick/plots/latency-w4.png'
set title 'latency distributions, 4 workers (empirical CDF)'
set style data lines
set logscale x
set xlabel 'microseconds'
set ylabel 'fraction of samples'
set key bottom right
plot 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 0 using 1:2 lw 2 title 'wake_latency blitz', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 1 using 1:2 lw 2 title 'wake_latency tokio', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 2 using 1:2 lw 2 title 'wake_latency go', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 3 using 1:2 lw 2 title 'wake_latency asio', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 4 using 1:2 lw 2 title 'wake_latency blitz-noprobes', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 5 using 1:2 lw 2 title 'sleep_lateness_idle blitz', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 6 using 1:2 lw 2 title 'sleep_lateness_idle tokio', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 7 using 1:2 lw 2 title 'sleep_lateness_idle go', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 8 using 1:2 lw 2 title 'sleep_lateness_idle blitz-noprobes', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 9 using 1:2 lw 2 title 'sleep_lateness_busy blitz', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 10 using 1:2 lw 2 title 'sleep_lateness_busy tokio', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 11 using 1:2 lw 2 title 'sleep_lateness_busy go', 'results/history/xeon-2c-kvm/quick/plots/latency-w4.dat' index 12 using 1:2 lw 2 title 'sleep_lateness_busy blitz-noprobes'
