#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make bench-compare REF=<tag or commit>: the benchmark of REF beside
# this tree's, on one machine, interleaved, each figure side by side.
#
#   compare.sh SRCDIR BUILDDIR REF [PART...]
#
# REF is built once under BUILDDIR/bench/ref/<commit> (git archive, then
# autoreconf, configure and make bench/bench there; kept for the next
# run).  Then, for each part (default: cycle handoff throughput herd),
# REF's bench and ours run one after the other in tmpfs (/dev/shm), the
# first one taking turns; then the parts in COMPARE_DISK_PARTS (default
# cycle) in BENCH_DISK_DIR (default /var/tmp); then, with a PYTHON that
# has filelock and where the side's tree has bench/python-bench.py, the
# Python cycle in both directories, each side with its own library
# (PIDLOCK_LIBRARY, PYTHONPATH).  All of it COMPARE_RUNS times (default
# 1); each figure is the median of its runs, and is named by where it
# was taken (shm: or disk:).  BENCH_ARGS go to both benches,
# PY_BENCH_ARGS to both Python runs (PY_BENCH_DISK_ARGS before them on
# the disk).  It ends with a verdict line per goal of issue 36, each
# side's figure against its bound, and the lost increments (two holders
# at once) of every run.  It prints; its figures fail nothing.
# COMPARE_RETRIES (default 2): see run_ref.
# Exit 1 only when REF cannot be built or a bench fails; a bench that
# stops because a peer (bare flock, liblockfile) lost increments has not
# failed: see run_ref below.  A loss of pidlock's own, either side's,
# still ends it.
set -u

[ $# -ge 3 ] || { echo "usage: compare.sh SRCDIR BUILDDIR REF [PART...]" >&2; exit 64; }
src=$1 build=$2 ref=$3
shift 3
PARTS=${*:-cycle handoff throughput herd}
RUNS=${COMPARE_RUNS:-1}
# How many more times REF's throughput part is run in one run when a
# peer's loss stopped it (an older bench stops at any loss).
RETRIES=${COMPARE_RETRIES:-2}
DISK=${BENCH_DISK_DIR:-/var/tmp}
DISK_PARTS=${COMPARE_DISK_PARTS-cycle}
PY=${PYTHON:-}
ours="$build/bench/bench"

die() { echo "bench-compare: $*" >&2; exit 1; }

[ -x "$ours" ] || die "$ours is not built"
[ -d "$DISK" ] || die "BENCH_DISK_DIR=$DISK is no directory"
# The last line: the mount on top where one hides another.
fstype() {
	{ findmnt -n -o FSTYPE --target "$1" 2>/dev/null ||
		stat -f -c %T "$1" 2>/dev/null || echo "?"; } | tail -n 1
}
shmfs=$(fstype /dev/shm)
diskfs=$(fstype "$DISK")
[ "$diskfs" = tmpfs ] &&
	echo "bench-compare: BENCH_DISK_DIR=$DISK is on tmpfs, not on a disk:" \
		"its disk: figures are tmpfs figures"
sha=$(git -C "$src" rev-parse --verify -q "$ref^{commit}") ||
	die "$ref: no such commit in $src (a git checkout is needed)"
short=$(git -C "$src" rev-parse --short "$sha")
refdir="$build/bench/ref/$sha"
theirs="$refdir/bench/bench"

# Built once; a failed build leaves no stamp and is done again.
if [ ! -f "$refdir/.built" ]; then
	echo "bench-compare: building $ref ($short) in $refdir"
	rm -rf "$refdir"
	mkdir -p "$refdir" || die "mkdir $refdir failed"
	git -C "$src" archive "$sha" | tar -x -C "$refdir" ||
		die "git archive $ref failed"
	( cd "$refdir" && autoreconf -fi && ./configure &&
	  make -j"$(nproc 2>/dev/null || echo 2)" bench/bench ) \
		>"$refdir.log" 2>&1 ||
		die "building $ref failed: see $refdir.log"
	: >"$refdir/.built"
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-compare.XXXXXX") ||
	die "mktemp failed"
trap 'rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One run of one part by one side: its CSV files in $out/SIDE.RUN.WHERE/
# (WHERE: shm or disk).  Our bench takes its synced cycle's second
# directory from -D; REF's may not know -D (it used /var/tmp).
run() {	# side part run where
	d="$out/$1.$3.$4"
	mkdir -p "$d" || exit 1
	if [ "$1" = ours ]; then set -- "$@" "$ours" -D "$DISK"
	else set -- "$@" "$theirs"; fi
	[ "$4" = disk ] && set -- "$@" -d "$DISK"
	shift 4
	txt="$d.$part.txt"
	if [ "$side" = ref ] && [ "$part" = throughput ]; then
		run_ref "$@"
		return
	fi
	# shellcheck disable=SC2086 # BENCH_ARGS: words on purpose
	"$@" --csv "$d" ${BENCH_ARGS:-} "$part" >"$txt" 2>&1 && {
		lost_lines; return 0; }
	grep -q "^bench: FAIL: pidlock lost" "$txt" &&
		die "this tree's pidlock lost increments in $part ($where)," \
			"two holders at once: $(grep '^bench: FAIL' "$txt" | head -1)"
	die "$side's bench $part ($where) failed: $(tail -3 "$txt")"
}

# Our bench counts each locker's lost increments, goes on past a peer's
# and prints a summary line per locker that lost any: kept for the end.
lost_lines() {
	[ "$side" = ours ] || return 0
	sed -n "s/^  lost increments: /  run $((i + 1)), this tree, $part ($where): /p" \
		"$txt" >>"$out/losses"
}

# REF's throughput part.  A bench of before issue 46 stops at the first
# lost increment of any locker, "two holders at once", without saying
# whose.  At each point it runs bare flock, then pidlock, then
# liblockfile, each for the same time (the heading's "S s a point"),
# and prints the point's row once all three have run: so the time from
# its last line to its stop says whose run it was (about 1, 2 or 3
# times S).  Its lines are stamped as they come (stdbuf -oL; without
# stdbuf they all come at the end and whose stays unknown).  A peer's
# stop, or one whose locker is unknown, is run again up to RETRIES
# times, then leaves the run without REF's later points (those before
# the stop are kept); pidlock's ends bench-compare as any failure does.
# A newer REF names the locker itself and stops only for pidlock.
run_ref() {	# bench args...
	attempt=0
	while :; do
		attempt=$((attempt + 1))
		rm -f "$txt.rc"
		# shellcheck disable=SC2086 # BENCH_ARGS: words on purpose
		{ $stdbuf "$@" --csv "$d" ${BENCH_ARGS:-} "$part" 2>&1
		  echo $? >"$txt.rc"; } | stamp >"$txt.stamps"
		sed 's/^[^ ]* //' "$txt.stamps" >"$txt"
		rc=$(cat "$txt.rc" 2>/dev/null || echo 1)
		[ "$rc" = 0 ] && return 0
		grep -q "^bench: FAIL: pidlock lost" "$txt" &&
			die "$ref's pidlock lost increments in $part ($where):" \
				"$(grep '^bench: FAIL' "$txt" | head -1)"
		grep -q "two holders at once" "$txt" ||
			die "$side's bench $part ($where) failed: $(tail -3 "$txt")"
		w=$(whose "$txt.stamps")
		who=${w%%|*} at=${w#*|}
		[ "$who" = pidlock ] &&
			die "$ref's bench $part ($where) stopped at a lost" \
				"increment $at, by its timing under pidlock's" \
				"own lock ($ref's): $(tail -1 "$txt")"
		msg="run $((i + 1)), $ref, $part ($where): its bench stopped at a lost increment $at, by its timing $who's"
		[ "$who" = unknown ] && msg="run $((i + 1)), $ref, $part ($where): its bench stopped at a lost increment $at; whose is unknown (no timing)"
		if [ "$attempt" -le "$RETRIES" ]; then
			echo "bench-compare: $msg; an older bench stops at" \
				"any locker's loss: again ($((attempt + 1)) of" \
				"$((RETRIES + 1)))"
			echo "  $msg (attempt $attempt, run again)" >>"$out/losses"
			continue
		fi
		echo "bench-compare: $msg; all $((RETRIES + 1)) attempt(s) stopped so:" \
			"no $ref figures past that point in this run"
		echo "  $msg (attempt $attempt: no $ref figures past it in this run)" \
			>>"$out/losses"
		return 0
	done
}
stdbuf=
command -v stdbuf >/dev/null 2>&1 && stdbuf="stdbuf -oL -eL"
# Each line as "SECONDS.NANOSECONDS LINE", stamped when it comes.
stamp() {
	while IFS= read -r line; do
		printf '%s %s\n' "$(date +%s.%N)" "$line"
	done
}
# From a stamped throughput part that stopped: "LOCKER|at P procs" (or
# "...after P procs"), LOCKER one of bare flock, pidlock, liblockfile,
# unknown.  The rows are "  PROCS FIGURES...".
whose() {	# stamps-file
	awk '
	match($0, /[0-9.]+ s a point:/) { s = substr($0, RSTART, RLENGTH) + 0 }
	/two holders at once/ { stop = $1; exit }
	{ last = $1 }
	$2 ~ /^[0-9]+$/ && NF > 3 { procs = $2 }
	END {
		at = procs == "" ? "at its first point" : \
			"after its row for " procs " procs"
		k = s > 0 && stop != "" ? int((stop - last) / s + 0.5) : 0
		split("bare flock|pidlock|liblockfile", name, "|")
		who = k >= 1 && k <= 3 ? name[k] : "unknown"
		print who "|" at
	}' "$1"
}

# The Python cycle of one side in one place, as
# $out/SIDE.RUN.WHERE/python.csv.  A python-bench.py that has no --parts
# nor --csv (older trees) runs its other parts with one hand-off and one
# contended cycle (last, so that they win), and its printed cycle lines
# become the CSV file.
pyrun() {	# side run where
	d="$out/$1.$2.$3"
	if [ "$1" = ours ]; then tree=$src lib=$build
	else tree=$refdir lib=$refdir; fi
	script="$tree/bench/python-bench.py"
	[ -f "$script" ] || return 0
	mkdir -p "$d" || exit 1
	dir=/dev/shm args=${PY_BENCH_ARGS:-}
	[ "$3" = disk ] && dir=$DISK args="${PY_BENCH_DISK_ARGS:-} $args"
	if grep -q -e '--parts' "$script"; then
		set -- --parts cycle --csv "$d/python.csv"
	else
		set -- --handoffs 1 --contended 1
	fi
	# shellcheck disable=SC2086 # args: words on purpose
	PIDLOCK_LIBRARY="$lib/lib/.libs/libpidlock.so.0" \
	PYTHONPATH="$tree/python" "$PY" -B "$script" --dir "$dir" $args \
		"$@" >"$d.python.txt" 2>&1 ||
		die "$side's python-bench.py ($where) failed:" \
			"$(tail -3 "$d.python.txt")"
	[ -f "$d/python.csv" ] && return 0
	{ echo "part,subject,per_second,us"
	  sed -n 's/^  \(.*[^ ]\)  *\([0-9][0-9]*\)\/s  ratio.*/cycle,\1,\2,/p' \
		"$d.python.txt"; } >"$d/python.csv"
}

python=no
if [ -z "$PY" ] || [ "$PY" = : ]; then
	echo "bench-compare: no python3: no Python figures"
elif ! "$PY" -c 'import filelock' 2>/dev/null; then
	echo "bench-compare: no filelock for $PY: no Python figures"
else
	python=yes
fi

# Each step by both sides, the first one taking turns run by run.
both() {	# function arg...
	if [ $((i % 2)) -eq 0 ]; then side=ref; "$@"; side=ours; "$@"
	else side=ours; "$@"; side=ref; "$@"; fi
}
runpart() { run "$side" "$part" "$i" "$where"; }
runpy() { pyrun "$side" "$i" "$where"; }

i=0
while [ "$i" -lt "$RUNS" ]; do
	where=shm
	for part in $PARTS; do
		echo "bench-compare: run $((i + 1))/$RUNS: $part in /dev/shm ($shmfs)"
		both runpart
	done
	where=disk
	for part in $DISK_PARTS; do
		echo "bench-compare: run $((i + 1))/$RUNS: $part in $DISK ($diskfs)"
		both runpart
	done
	if [ "$python" = yes ]; then
		for where in shm disk; do
			[ "$where" = shm ] && d=/dev/shm || d=$DISK
			echo "bench-compare: run $((i + 1))/$RUNS: python in $d"
			both runpy
		done
	fi
	i=$((i + 1))
done

# The version a side's bench printed first (not the Python runs' files).
ver() {
	for f; do
		v=$(sed -n '1s/^libpidlock \([^ ]*\) benchmark.*/\1/p' "$f")
		[ -n "$v" ] && break
	done
	echo "${v:-?}"
}
this=$(ver "$out"/ours.0.*.txt)
echo
echo "bench-compare: $ref ($short, $(ver "$out"/ref.0.*.txt)) against this tree" \
	"($this), $(nproc) cores," \
	"Linux $(uname -r), $RUNS run(s), medians"
echo "  shm: /dev/shm ($shmfs); disk: $DISK ($diskfs)"

# Every CSV row of both sides, as SIDE,WHERE,FILE,ROW: the leading
# columns that are not numbers name the row, each number column is a
# figure.  Throughput also gets each side's pidlock/bare, herds each
# kind's latency and CPU over bare's: figures made within one run.
for where in shm disk; do
	for f in cycle synced handoff throughput herd python; do
		for side in ref ours; do
			for d in "$out/$side".*."$where"/; do
				[ -f "$d$f.csv" ] &&
					sed "s/^/$side,$where,$f,/" "$d$f.csv"
			done
		done
	done
done | awk -F, -v refname="$ref" -v disk="$DISK" -v diskfs="$diskfs" \
	-v shmfs="$shmfs" '
function num(s) { return s ~ /^-?[0-9]+(\.[0-9]*)?(e[-+]?[0-9]+)?$/ }
function median(key, side,   n, i, j, t, v) {
	n = cnt[side, key]
	if (!n) return ""
	for (i = 1; i <= n; i++) v[i] = val[side, key, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(side, key, x) {
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	val[side, key, ++cnt[side, key]] = x
}
# The first line of each file names its columns.
$4 == "subject" || $4 == "procs" || $4 == "kind" || $4 == "dir" ||
$4 == "part" {
	for (i = 4; i <= NF; i++) head[$3, i] = $i
	next
}
{
	side = $1; f = $3; name = $2 ":" f
	i = 4
	if (f == "throughput") { name = name " " $4 " procs"; i = 5 }
	for (; i <= NF && !num($i); i++) name = name " " $i
	if (f == "herd") { name = name " " $i; i++ }
	# Lost increments are not figures to compare: the end lists them.
	for (; i <= NF; i++)
		if (num($i) && head[f, i] != "handoffs" && head[f, i] !~ /_lost$/)
			add(side, name " " head[f, i], $i)
	if (f == "throughput" && $5 > 0)
		add(side, name " pidlock/bare", $6 / $5)
	if (f == "herd") {
		if ($4 == "bare") { bl[side, $2, $5] = $7; bc[side, $2, $5] = $8 }
		else if (bl[side, $2, $5] > 0) {
			add(side, name " latency/bare", $7 / bl[side, $2, $5])
			add(side, name " cpu/bare", $8 / bc[side, $2, $5])
		}
	}
}
function m(side, key) { return median(key, side) }
function us(rate) { return rate == "" || rate + 0 == 0 ? "" : 1e6 / rate }
function show(x) { return x == "" ? "-" : sprintf("%.4g", x) }
# One side against one bound: "4.2x (a/b) MISS"; no figure: "no figure".
function judge(a, b, bound, unit,   r) {
	if (a == "" || b == "" || b + 0 == 0) return "no figure"
	r = a / b
	return sprintf("%.2fx (%s/%s %s) %s", r, show(a), show(b), unit,
		       r <= bound ? "PASS" : "MISS")
}
function verdict(what, bound, ra, rb, oa, ob, unit) {
	printf "  %s, bound %sx:\n      %s: %s; this tree: %s\n", what, bound,
	       refname, judge(ra, rb, bound, unit), judge(oa, ob, bound, unit)
}
# Ours against REF over a list of keys; times must not grow by more than
# 5%, rates not fall by more than 5%.
function regress(what, keys, higher,   n, k, i, a, b, r, worst, out, bad, miss) {
	n = split(keys, k, "|")
	worst = ""; out = ""; miss = 0
	for (i = 1; i <= n; i++) {
		a = m("ref", k[i]); b = m("ours", k[i])
		if (a == "" || b == "" || a + 0 == 0) { miss = 1; continue }
		r = b / a
		bad = higher ? r < 0.95 : r > 1.05
		out = out sprintf(" %s%.2f", label[i] ? label[i] "=" : "", r)
		if (worst == "" || (higher ? r < worst : r > worst)) worst = r
		if (bad) fail = 1
	}
	printf "  no regression in tmpfs, %s, this/%s %s:\n     %s%s: %s\n",
	       what, refname, higher ? ">= 0.95" : "<= 1.05",
	       out == "" ? " (no figures)" : out,
	       miss && out != "" ? " (some figures missing)" : "",
	       worst == "" ? "no figure" : (fail ? "MISS" : "PASS")
	fail = 0
	delete label
}
END {
	printf "  %-48s %12s %12s %9s\n", "figure", refname, "this tree", "this/ref"
	for (k = 1; k <= nk; k++) {
		a = median(order[k], "ref"); b = median(order[k], "ours")
		r = (a != "" && b != "" && a + 0 != 0) ? sprintf("%8.2fx", b / a) : "        -"
		printf "  %-48s %12s %12s %9s\n", substr(order[k], 1, 48),
		       a == "" ? "-" : sprintf("%.4g", a),
		       b == "" ? "-" : sprintf("%.4g", b), r
	}
	print "  (us for times, per second for throughput and python; /bare" \
	      " and ratio columns are within one run: lower is better for" \
	      " times, higher for rates)"

	print ""
	print "bench-compare: verdicts (issue 36; figures are medians; they fail nothing)"
	# 1. The default, synced C cycle on the disk against bare flock in
	# the same directory: from the synced cycle, whose bare row older
	# benches lack (then the disk run cycle part s bare).
	for (s = 1; s <= 2; s++) {
		side = s == 1 ? "ref" : "ours"
		# Ours: "default"; before PIDLOCK_SYNC the default synced,
		# and the row was "fdatasync".
		fd[side] = m(side, "disk:synced " disk " default median_us")
		if (fd[side] == "")
			fd[side] = m(side, "disk:synced " disk " fdatasync median_us")
		bare[side] = m(side, "disk:synced " disk " bare median_us")
		if (bare[side] == "") {
			bare[side] = m(side, "disk:cycle bare median_us")
			if (bare[side] != "")
				note = note " " (side == "ref" ? refname : "this tree")
		}
	}
	verdict(diskfs " C cycle, default flags / bare flock there",
		3, fd["ref"], bare["ref"], fd["ours"], bare["ours"], "us")
	if (note != "")
		print "      (bare for" note ": from its cycle part there," \
		      " not from the batches of the synced cycle)"
	# 2. pidlock.FileLock from Python: the time of a cycle, the
	# inverse of the median rate.
	for (w = 1; w <= 2; w++) {
		where = w == 1 ? "disk" : "shm"
		fs = w == 1 ? diskfs : shmfs
		p = where ":python cycle "
		verdict("python " fs " cycle, pidlock.FileLock / filelock.FileLock",
			3, us(m("ref", p "pidlock.FileLock per_second")),
			us(m("ref", p "filelock.FileLock per_second")),
			us(m("ours", p "pidlock.FileLock per_second")),
			us(m("ours", p "filelock.FileLock per_second")), "us")
	}
	for (w = 1; w <= 2; w++) {
		where = w == 1 ? "disk" : "shm"
		fs = w == 1 ? diskfs : shmfs
		p = where ":python cycle "
		verdict("python " fs " cycle, pidlock.FileLock / pidlock.Lock",
			1.2, us(m("ref", p "pidlock.FileLock per_second")),
			us(m("ref", p "pidlock.Lock per_second")),
			us(m("ours", p "pidlock.FileLock per_second")),
			us(m("ours", p "pidlock.Lock per_second")), "us")
	}
	# 3. Timed waiters in tmpfs, against bare flock in the same run.
	verdict(shmfs " herd of 64 timed waiters, latency / bare flock", 1.5,
		m("ref", "shm:herd timed 64 latency_us"),
		m("ref", "shm:herd bare 64 latency_us"),
		m("ours", "shm:herd timed 64 latency_us"),
		m("ours", "shm:herd bare 64 latency_us"), "us")
	verdict(shmfs " herd of 64 timed waiters, CPU per hand-off / bare flock",
		1.5, m("ref", "shm:herd timed 64 cpu_us"),
		m("ref", "shm:herd bare 64 cpu_us"),
		m("ours", "shm:herd timed 64 cpu_us"),
		m("ours", "shm:herd bare 64 cpu_us"), "us")
	verdict(shmfs " hand-off to one timed waiter / bare flock", 1.5,
		m("ref", "shm:handoff timed median_us"),
		m("ref", "shm:handoff bare median_us"),
		m("ours", "shm:handoff timed median_us"),
		m("ours", "shm:handoff bare median_us"), "us")
	# 4. No regression against REF, tmpfs.
	label[1] = "pidlock"; label[2] = "shared-join"
	regress("cycle time (NO_SYNC)", "shm:cycle pidlock median_us|" \
		"shm:cycle shared-join median_us", 0)
	keys = ""
	split("1 2 4 8 16 64", np, " ")
	for (i = 1; i <= 6; i++) {
		keys = keys (i > 1 ? "|" : "") "shm:throughput " np[i] \
		       " procs pidlock"
		label[i] = np[i] "p"
	}
	regress("pidlock throughput at 1-64 processes", keys, 1)
	keys = ""
	split("1 8 64", nw, " ")
	for (i = 1; i <= 3; i++) {
		keys = keys (i > 1 ? "|" : "") "shm:herd blocked " nw[i] \
		       " latency_us|shm:herd blocked " nw[i] " cpu_us"
		label[2 * i - 1] = "lat" nw[i]; label[2 * i] = "cpu" nw[i]
	}
	regress("blocked herd latency and CPU at 1, 8, 64 waiters", keys, 0)
}'

# Who lost increments (two holders at once), run by run: this tree's
# bench counts each locker's and goes on past a peer's; REF's may stop.
echo
if [ -s "$out/losses" ]; then
	echo "bench-compare: lost increments, two holders at once (a peer's" \
		"fail nothing; a loss of pidlock's own would have ended the run):"
	cat "$out/losses"
else
	echo "bench-compare: no locker lost an increment"
fi
