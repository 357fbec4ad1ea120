#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make check: every test layer, then one line "N passed, N failed".
#   builds (6.12 and 6.1, W=1) and lint, unit (GoogleTest/CTest), KUnit (UML),
#   the rdma-core provider, the Debian packages, guest selftests (QEMU), the
#   conformance suite (QEMU).
#   Each layer's log: build/check-logs/LAYER.log
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
logs=$top/build/check-logs
mkdir -p "$logs"
passed=0 failed=0 failures=()
t0=$SECONDS

# layer NAME COMMAND...: runs a layer, echoing its output to the log and stdout.
layer() {
	local name=$1 start=$SECONDS rc
	shift
	echo "=== $name"
	"$@" 2>&1 | tee "$logs/$name.log"
	rc=${PIPESTATUS[0]}
	echo "=== $name: exit $rc ($((SECONDS - start)) s)"
	return "$rc"
}

# add P F NAME: count a layer's tests.
add() {
	passed=$((passed + $1))
	failed=$((failed + $2))
	[ "$2" -eq 0 ] || failures+=("$3")
}

# Builds and lint: one test each.
for step in module-6.12 module-6.1; do
	if layer "$step" make --no-print-directory "$step"; then add 1 0 "$step"; else add 0 1 "$step"; fi
done
if layer lint scripts/lint.sh; then add 1 0 lint; else add 0 1 lint; fi

# Unit tests: CTest's own count.
layer unit scripts/run-unit.sh
rc=$?
line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$logs/unit.log" | tail -n1)
if [ -n "$line" ]; then
	f=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
	n=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
	add $((n - f)) "$f" unit
	[ "$rc" -eq 0 ] || [ "$f" -ne 0 ] || add 0 1 unit
else
	add 0 1 unit
fi

# KUnit: kunit.py's count.
layer kunit scripts/run-kunit.sh
rc=$?
line=$(grep -E 'Ran [0-9]+ tests' "$logs/kunit.log" | tail -n1)
if [ -n "$line" ]; then
	n=$(sed -E 's/.*Ran ([0-9]+) tests.*/\1/' <<<"$line")
	p=$(sed -nE 's/.*passed: ([0-9]+).*/\1/p' <<<"$line")
	add "${p:-0}" $((n - ${p:-0})) kunit
	[ "$rc" -eq 0 ] || [ "$n" -ne "${p:-0}" ] || add 0 1 kunit
else
	add 0 1 kunit
fi

# The rdma-core provider the userspace Verbs selftests load: one test.
if layer provider scripts/provider.sh; then add 1 0 provider; else add 0 1 provider; fi

# The Debian packages (make deb), lintian clean: one test.  Installing them in a
# guest takes longer than this whole run may (make check-install).
if layer deb scripts/deb.sh; then add 1 0 deb; else add 0 1 deb; fi

# Guest selftests: one per test script.
layer selftests make --no-print-directory selftests
rc=$?
line=$(grep -E '^selftests: [0-9]+ passed, [0-9]+ failed' "$logs/selftests.log" | tail -n1)
if [ -n "$line" ]; then
	p=$(sed -E 's/selftests: ([0-9]+) passed.*/\1/' <<<"$line")
	f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
	add "$p" "$f" selftests
	[ "$rc" -eq 0 ] || [ "$f" -ne 0 ] || add 0 1 selftests
else
	add 0 1 selftests
fi

# The compliance suite: its TAP count (known gaps are TODO tests and count as passed).
layer conformance tools/testing/conformance/run.sh
rc=$?
line=$(grep -E '^# conformance: [0-9]+ passed, [0-9]+ failed' "$logs/conformance.log" | tail -n1)
if [ -n "$line" ]; then
	n=$(grep -cE '^(not )?ok [0-9]+ - ' "$top/build/conformance/results/normal.tap" || true)
	f=$(grep -E '^not ok [0-9]+ - ' "$top/build/conformance/results/normal.tap" |
		grep -vc '# TODO' || true)
	add $((n - f)) "$f" conformance
	[ "$rc" -eq 0 ] || [ "$f" -ne 0 ] || add 0 1 conformance
else
	add 0 1 conformance
fi

# What failed, by name, last: CI shows the end of this output.
why_failed() {
	local n
	for n in $(sed -n 's/^failed: //p' "$logs/selftests.log" | tail -n1); do
		echo "failed guest test $n (make selftests T=$n):"
		grep -aE "^\[$n(-[ab])?\] (not ok |FAIL|\| )" "$logs/selftests.log" | sed -n 1,20p
	done
	# each failed conformance test with what it printed (its "# " lines) before it
	[ -f "$top/build/conformance/results/normal.tap" ] &&
		awk '/^(not )?ok [0-9]+ - / {
			if ($1 == "not" && $0 !~ /# TODO/) {
				print "failed conformance test: " $0
				for (i = 0; i < n && i < 20; i++) print "  " said[i]
			}
			n = 0; next
		}
		/^#   clauses: / { next }
		/^# / { said[n++] = $0 }' "$top/build/conformance/results/normal.tap"
	return 0
}

echo "=== make check: $((SECONDS - t0)) s"
[ "$failed" -eq 0 ] || { why_failed; echo "failing layers: ${failures[*]}"; }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
