#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A file that is not a lock file is never changed or deleted, whatever the
# mode and the flags: a script, a text file, a 1 MiB binary with NUL bytes,
# spec-like lines followed by other text, a file that holds "x".  Each
# refusal exits 65 with a message that names the file, says it holds other
# data and that nothing changed, and points to a separate lock file; the
# bytes (sha256) and the inode are checked after every call.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

make_files() {
	rm -rf d
	mkdir d
	printf '#!/bin/sh\necho hi\n' > d/script.sh
	chmod 0755 d/script.sh
	printf 'my data\n' > d/data.txt
	head -c 1048576 /dev/urandom > d/blob.bin
	# NUL bytes at the start, in the middle and at the end
	printf '\0\0\0\0' | dd of=d/blob.bin bs=1 seek=0 conv=notrunc status=none
	printf '\0\0\0\0' | dd of=d/blob.bin bs=1 seek=524288 conv=notrunc status=none
	printf '\0\0\0\0' | dd of=d/blob.bin bs=1 seek=1048572 conv=notrunc status=none
	printf 'pid=%s\ntimestamp=%s\nlock=flock,ofd\n\nDear diary, this is not a lock.\n' \
		"$(dead_pid)" "$(date +%s)" > d/speclike.txt
	printf 'x' > d/x
	# Old, so that no grace period for a file being written applies.
	touch -d '1 hour ago' d/*
	FILES="d/script.sh d/data.txt d/blob.bin d/speclike.txt d/x"
}

# snap FILE: its checksum, inode, size and mode
snap() {
	printf '%s %s\n' "$(sha256sum < "$1" | cut -d' ' -f1)" \
		"$(stat -c '%i %s %a' "$1")"
}

# refused WHAT FILE ARGS...: pidlock ARGS exits 65, says what it must,
# runs nothing, and FILE is byte for byte and inode for inode the same.
refused() {
	local what=$1 f=$2 before rc
	shift 2
	before=$(snap "$f")
	rm -f ran
	"$PIDLOCK" "$@" > out 2> err
	rc=$?
	[ $rc -eq 65 ] || fail "$what: exit status $rc, expected 65 ($(cat err))"
	[ "$(snap "$f")" = "$before" ] || fail "$what: $f changed: $before -> $(snap "$f")"
	[ ! -e ran ] || fail "$what: the command ran"
	grep -qF "pidlock: $f: not a lock file: it holds other data" err &&
		grep -q 'nothing was changed' err &&
		grep -qF "Use a separate lock file for the lock, such as '$f.lock'" err ||
		fail "$what: message: $(cat err)"
	[ "$(ls d | wc -l)" = 5 ] || fail "$what: the directory changed: $(ls -a d)"
}

make_files
[ "$(stat -c %s d/blob.bin)" = 1048576 ] && [ "$(tr -d '\0' < d/blob.bin | wc -c)" -lt 1048576 ] ||
	fail "the binary file is not 1 MiB with NUL bytes"
for f in $FILES; do
	refused "run mode, $f" "$f" "$f" touch ran
	refused "-n, $f" "$f" -n "$f" touch ran
	refused "-w 1, $f" "$f" -w 1 "$f" touch ran
	refused "--keep-file, $f" "$f" --keep-file "$f" touch ran
	refused "--exec, $f" "$f" --exec "$f" touch ran
	refused "--plain-pid --no-sync, $f" "$f" --plain-pid --no-sync "$f" touch ran
	refused "--flock-only, $f" "$f" --flock-only "$f" touch ran
	refused "--fcntl-only, $f" "$f" --fcntl-only "$f" touch ran
	refused "-q (not a conflict: still 65), $f" "$f" -q "$f" touch ran
	refused "-c, $f" "$f" "$f" -c 'touch ran'
	refused "--remove, $f" "$f" --remove "$f"
	refused "--remove -q -w 1, $f" "$f" --remove -q -w 1 "$f"
	pass "$f: every run mode and --remove exit 65 and change nothing"
done

# The reproduction of the report, literally.
printf '#!/bin/sh\necho hi\n' > script.sh
printf 'my data\n' > data.txt
touch -d '1 hour ago' script.sh data.txt
s1=$(snap script.sh) d1=$(snap data.txt)
"$PIDLOCK" ./script.sh true 2> err
rc=$?
[ $rc -eq 65 ] && [ "$(snap script.sh)" = "$s1" ] || fail "pidlock ./script.sh true: $rc, $(cat err)"
"$PIDLOCK" --keep-file data.txt true 2> err
rc=$?
[ $rc -eq 65 ] && [ "$(snap data.txt)" = "$d1" ] || fail "pidlock --keep-file data.txt true: $rc, $(cat err)"
[ "$(cat data.txt)" = "my data" ] || fail "data.txt: $(cat data.txt)"
pass "the reported cases: the script and the data stay"

# --status, --json and --list say what the file is, and change nothing.
for f in $FILES; do
	before=$(snap "$f")
	"$PIDLOCK" --status "$f" > out 2> err
	rc=$?
	[ $rc -eq 65 ] || fail "--status $f: exit status $rc"
	grep -qF "$f: not-a-lock-file (it holds other data" out || fail "--status $f: $(cat out)"
	status_json "$f"
	[ "$JRC" -eq 65 ] && [ "$(jv j 0 state)" = not-a-lock-file ] &&
		[ "$(jv j 0 exit_status)" = 65 ] && [ "$(jv j 0 pid)" = null ] &&
		[ "$(jv j 0 pid_alive)" = null ] || fail "--status --json $f: $(cat j)"
	[ "$(snap "$f")" = "$before" ] || fail "--status changed $f"
done
pass "--status: not-a-lock-file, exit 65, in text and JSON"
"$PIDLOCK" --list d > out || fail "--list exit status"
for f in $FILES; do
	grep -q "^${f#d/} *not-a-lock-file " out || fail "--list: ${f#d/}: $(cat out)"
done
"$PIDLOCK" --list --json d > j || fail "--list --json exit status"
json_flat j
[ "$(grep -c '\.state=not-a-lock-file$' j.flat)" = 5 ] || fail "--list --json: $(cat j)"
pass "--list shows each of them as not-a-lock-file"

# Several files: the lock file is removed, the others stay; exit 65.
make_files
printf 'pid=%s\ntimestamp=1\nlock=flock,ofd\n' "$(dead_pid)" > d/left.lock
before=$(snap d/data.txt)
"$PIDLOCK" --remove d/left.lock d/data.txt 2> err
rc=$?
[ $rc -eq 65 ] && [ ! -e d/left.lock ] && [ "$(snap d/data.txt)" = "$before" ] ||
	fail "--remove of a lock file and a data file: $rc, $(cat err)"
pass "--remove of several: the left-over lock goes, the data file stays, exit 65"

# Not lock files after all: an empty file and a bare pid are lock files.
: > empty.lock
touch -d '1 hour ago' empty.lock
expect 0 "an empty file is a lock file" -- "$PIDLOCK" empty.lock true
printf '%s\n' "$(dead_pid)" > pid.lock
touch -d '1 hour ago' pid.lock
expect 0 "a bare pid is a lock file" -- "$PIDLOCK" pid.lock true
done_testing
