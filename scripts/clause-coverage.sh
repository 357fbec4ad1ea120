#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Print every clause of the MetaRoCE spec, its strongest keyword, and the tests citing it.
#
# A clause is defined where a paragraph of Documentation/metaroce/*.rst opens with
# **[MR-AREA-n]**; a test cites it by mentioning MR-AREA-n (or MR_AREA_n in a test name)
# anywhere under tools/testing/.
# Usage: scripts/clause-coverage.sh [--uncited]   (exit status is always 0 unless misused)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
spec_dir=$root/Documentation/metaroce
test_dir=$root/tools/testing
only_uncited=0
case "${1:-}" in
--uncited) only_uncited=1 ;;
"") ;;
*) echo "usage: $0 [--uncited]" >&2; exit 2 ;;
esac

# id <TAB> keyword: the clause paragraph runs from its id to the next blank line.
clauses=$(awk '
	function flush() {
		if (id != "") {
			kw = "-"
			if (text ~ /MUST/) kw = "MUST"
			else if (text ~ /SHOULD/) kw = "SHOULD"
			else if (text ~ /MAY/) kw = "MAY"
			print id "\t" kw
		}
		id = ""; text = ""
	}
	/^\*\*\[MR-[A-Z]+-[0-9]+\]\*\*/ {
		flush()
		match($0, /MR-[A-Z]+-[0-9]+/)
		id = substr($0, RSTART, RLENGTH)
		text = $0
		next
	}
	/^[[:space:]]*$/ { flush(); next }
	{ if (id != "") text = text " " $0 }
	END { flush() }
' "$spec_dir"/*.rst | sort -t- -k2,2 -k3,3n -u)

# id <TAB> file, for every citation (underscores in test names count as dashes).
citations=$(grep -rEo 'MR[-_][A-Z]+[-_][0-9]+' "$test_dir" "$root/drivers/metaroce/core/tests" \
		--include='*.c' --include='*.cpp' --include='*.h' --include='*.hpp' \
		--include='*.txt' --include='*.sh' 2>/dev/null |
	awk -F: -v root="$root/" '{
		f = $1; sub(root, "", f); id = $2; gsub("_", "-", id); print id "\t" f
	}' | sort -u || true)

total=0
cited=0
while IFS=$'\t' read -r id kw; do
	[ -n "$id" ] || continue
	total=$((total + 1))
	files=$(printf '%s\n' "$citations" | awk -F'\t' -v id="$id" '$1 == id { print $2 }' |
		paste -sd, -)
	if [ -n "$files" ]; then
		cited=$((cited + 1))
		[ $only_uncited -eq 1 ] || printf '%-14s %-6s %s\n' "$id" "$kw" "$files"
	else
		printf '%-14s %-6s %s\n' "$id" "$kw" "(not cited)"
	fi
done <<< "$clauses"

must_uncited=$(while IFS=$'\t' read -r id kw; do
	[ "$kw" = MUST ] || continue
	printf '%s\n' "$citations" | awk -F'\t' -v id="$id" '$1 == id { f = 1 } END { exit !f }' ||
		echo "$id"
done <<< "$clauses" | wc -l)

echo "clauses: $total, cited by tests: $cited, not cited: $((total - cited))" \
	"(of which MUST: $must_uncited)"
