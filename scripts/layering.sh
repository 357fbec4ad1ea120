#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The kernel glue's files call each other downwards only, in the order that
# drivers/metaroce/metaroce.h gives ("in this order from the bottom: ...").
# Prints every call, or use of an object, that goes sideways or up, and fails
# then; used by make lint.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
glue=$top/drivers/metaroce
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The order, from the comment in metaroce.h (it may span lines).
read -r -a order < <(tr '\n' ' ' <"$glue/metaroce.h" | sed -E 's/ +\*( |\/)/ /g' |
	sed -nE 's/.*in this order from the bottom: ([a-z, ]+)[(.].*/\1/p' | tr -d ',') || true
[ ${#order[@]} -gt 5 ] || { echo "layering: no order found in metaroce.h" >&2; exit 1; }
declare -A rank
for i in "${!order[@]}"; do rank[${order[$i]}]=$i; done

# What each file defines for the others: functions and objects not static.
: >"$tmp/defs"
for f in "$glue"/*.c; do
	b=$(basename "$f" .c)
	case $b in *.mod) continue ;; esac
	[ -n "${rank[$b]+x}" ] || [ "$b" = trace ] || {
		echo "layering: $b.c is not in metaroce.h's order" >&2; exit 1; }
	grep -E '^[a-z][^;]*\bmetaroce_[a-z0-9_]+ *(\(|=|;)' "$f" | grep -vE '^(static|extern)' |
		grep -oE '\bmetaroce_[a-z0-9_]+ *(\(|=|;)' | grep -oE 'metaroce_[a-z0-9_]+' |
		sed "s/\$/ $b/" >>"$tmp/defs" || true
done
cut -d' ' -f1 "$tmp/defs" | sort -u >"$tmp/names"

bad=0
for f in "$glue"/*.c; do
	b=$(basename "$f" .c)
	[ -n "${rank[$b]+x}" ] || continue
	# Comments name other files' functions freely: only code counts.
	{ perl -0pe 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g' "$f" | grep -owF -f "$tmp/names" || true; } |
		sort -u |
	while read -r name; do
		owner=$(awk -v n="$name" '$1 == n { print $2; exit }' "$tmp/defs")
		if [ "$owner" = "$b" ] || [ "$owner" = trace ]; then continue; fi
		if [ "${rank[$owner]}" -ge "${rank[$b]}" ]; then
			echo "layering: $b.c uses $name of $owner.c, which is not below it"
			echo x >>"$tmp/bad"
		fi
	done
done
[ -e "$tmp/bad" ] && bad=$(wc -l <"$tmp/bad")
if [ "$bad" -gt 0 ]; then
	echo "layering: $bad use(s) against the order: ${order[*]}"
	exit 1
fi
echo "layering: ${#order[@]} files, every call downwards"
