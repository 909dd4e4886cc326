# Medians and ranges for the bench scripts. Sourcing this file defines
# functions only (no work directory, no copies, no traps), so scripts that
# do not use bench-lib.sh's harness take their medians from here too.

# stats: reads numbers, one per line, prints "median min max n"; an even
# count's median is the mean of its two middle values ("nan nan nan 0"
# when there is none).
stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "nan nan nan 0"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m, v[1], v[NR], NR }'
}
# median: the median alone of numbers read one per line ("" when none).
median() { stats | awk '$4 { print $1 }'; }
# fmt_range MEDIAN MIN MAX N DIGITS: "m (lo-hi)", or "-" when there was none.
fmt_range() { awk -v m="$1" -v lo="$2" -v hi="$3" -v d="$5" 'BEGIN { if (m == "nan") print "-"; else printf "%." d "f (%." d "f-%." d "f)", m, lo, hi }'; }
