#!/usr/bin/env bash
# Plots test accuracy against training wall time, one labelled curve per run,
# from the CSV files chorus_trainer writes with --csv (docs/trainer.md).
#
#   examples/trainer/plot_accuracy.sh [-t title] OUT.png RUN.csv[=label] ...
#
# The x axis is the cumulative "seconds" column (training time; evaluation
# excluded), the y axis "test_accuracy" in percent. Columns are found by
# name in the header. A file holding several appended runs (epoch falls back
# to 1) draws them as separate segments of one curve. Needs gnuplot
# (Debian gnuplot-nox).
set -euo pipefail

title="Fashion-MNIST test accuracy"
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts "t:h" opt; do
  case $opt in
    t) title=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
out=$1
shift
command -v gnuplot >/dev/null || { echo "plot_accuracy: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plots=()
index=0
for spec in "$@"; do
  csv=${spec%%=*}
  label=$(basename "$csv" .csv)
  [ "$spec" != "$csv" ] && label=${spec#*=}
  [ -r "$csv" ] || { echo "plot_accuracy: cannot read $csv" >&2; exit 1; }
  data="$work/$index.dat"
  # Cumulative training seconds vs accuracy in percent; a blank line between
  # appended runs.
  awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
              if (!("epoch" in col) || !("seconds" in col) || !("test_accuracy" in col)) {
                print "missing epoch, seconds or test_accuracy column" > "/dev/stderr"; exit 1 }
              next }
    $col["epoch"] == 1 { if (NR > 2) print ""; t = 0 }
    { t += $col["seconds"]; print t, 100 * $col["test_accuracy"] }' "$csv" > "$data" ||
    { echo "plot_accuracy: $csv is not a chorus_trainer CSV" >&2; exit 1; }
  label=${label//\"/\'}
  plots+=("'$data' using 1:2 with linespoints lw 2 pt 7 ps 0.8 title \"$label\"")
  index=$((index + 1))
done

joined=$(printf '%s, ' "${plots[@]}")
gnuplot <<GNUPLOT
set terminal pngcairo size 900,600 font "sans,11"
set output "$out"
set title "$title"
set xlabel "training wall time (s, cumulative; evaluation excluded)"
set ylabel "test accuracy (%)"
set grid
set key bottom right
plot ${joined%, }
GNUPLOT
echo "plot_accuracy: wrote $out" >&2
