#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Print the Debian symbols file of the shared library, derived from the
# linker version script alone:
#
#   gen-symbols.sh VERSION-SCRIPT SONAME PACKAGE
#
# Every global symbol of node PIDLOCK_X.Y gets the minimal version X.Y.0:
# a node is named after the release that introduced it, so the symbols
# file needs no second list to keep in step.  The node name itself is a
# symbol too (NODE@NODE), which lets dependent packages require a node.
#
# Wildcards and extern "C++" blocks cannot be listed one by one, so they
# are refused rather than guessed at.
set -eu

if [ $# -ne 3 ]; then
	echo "usage: $0 VERSION-SCRIPT SONAME PACKAGE" >&2
	exit 2
fi
script=$1
soname=$2
package=$3

if [ ! -r "$script" ]; then
	echo "$0: cannot read $script" >&2
	exit 1
fi

printf '%s %s #MINVER#\n' "$soname" "$package"
printf '* Build-Depends-Package: %s-dev\n' "${package%%[0-9]*}"

# awk sees the script as one token stream: comments dropped, punctuation
# split off, so layout (one symbol per line or not) does not matter.
LC_ALL=C awk -v script="$script" '
function fail(msg) {
	printf "%s: %s\n", script, msg > "/dev/stderr"
	failed = 1
	exit 1
}
function minver(node,    v) {
	v = node
	if (!sub(/^[A-Z][A-Z0-9_]*_/, "", v) || v !~ /^[0-9]+\.[0-9]+$/)
		fail("node " node " is not named NAME_MAJOR.MINOR")
	return v ".0"
}
{ text = text $0 "\n" }
END {
	if (failed)
		exit 1
	# Block comments may span lines; shell-style comments end at a newline.
	while ((s = index(text, "/*")) > 0) {
		rest = substr(text, s + 2)
		e = index(rest, "*/")
		if (e == 0)
			fail("unterminated comment")
		text = substr(text, 1, s - 1) " " substr(rest, e + 2)
	}
	gsub(/#[^\n]*/, " ", text)
	gsub(/[{};:]/, " & ", text)
	n = split(text, tok, /[ \t\n]+/)

	state = "outside"
	for (i = 1; i <= n; i++) {
		t = tok[i]
		if (t == "")
			continue
		if (state == "outside") {
			node = t
			if (tok[++i] == "")
				i++
			if (tok[i] != "{")
				fail("expected { after node " node)
			if (node in seen)
				fail("node " node " defined twice")
			seen[node] = 1
			order[++nodes] = node
			ver[node] = minver(node)
			scope = "global"
			state = "inside"
		} else if (state == "inside") {
			if (t == "}") {
				state = "after"
			} else if ((t == "global" || t == "local") && tok[i + 1] == ":") {
				scope = t
				i++
			} else if (t == "extern") {
				fail("extern blocks are not supported")
			} else if (t == ";") {
				continue
			} else {
				if (tok[i + 1] != ";")
					fail("expected ; after " t)
				if (scope == "local")
					continue
				if (t ~ /[*?\[]/)
					fail("wildcard " t " in global scope of " node)
				if (t in owner)
					fail(t " is in both " owner[t] " and " node)
				owner[t] = node
				syms[node] = syms[node] " " t
			}
		} else {
			# "} PARENT ;" or "} ;"
			if (t != ";" && tok[i + 1] == ";")
				i++
			else if (t != ";")
				fail("expected ; after } of " node)
			state = "outside"
		}
	}
	if (state != "outside")
		fail("unterminated node " node)
	if (nodes == 0)
		fail("no version node")
	for (k = 1; k <= nodes; k++) {
		node = order[k]
		printf " %s@%s %s\n", node, node, ver[node]
		m = split(syms[node], list, " ")
		# Sorted per node so reordering the script changes nothing.
		for (a = 1; a <= m; a++)
			for (b = a + 1; b <= m; b++)
				if (list[b] < list[a]) {
					x = list[a]; list[a] = list[b]; list[b] = x
				}
		for (a = 1; a <= m; a++)
			printf " %s@%s %s\n", list[a], node, ver[node]
	}
}' "$script"
