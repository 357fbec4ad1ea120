#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make conformance: builds the suite, mr_dut.ko and metaroce.ko, runs the suite against the
# module in a QEMU guest, prints TAP and a summary, regenerates compliance.rst.
#   run.sh                    the suite against the normal build
#   run.sh --mutations [M..]  also build each test-only mutation of the module (all by
#                             default) and run the suite against it: each must be caught
# Results: build/conformance/results/ (NAME.tap, NAME.xml, NAME.log).
# CONF_FILTER=GTEST_PATTERN runs only matching tests (e.g. 'AckTest.*:*MR_SEC_1*').
# CONF_FUZZ_ITERS, CONF_FUZZ_SEED: packets and seed of the receive-path fuzzer (FuzzTest).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
build=$top/build/conformance
results=$build/results
# Every mutation the module knows (#ifdef METAROCE_MUTATION_<NAME> in drivers/metaroce).
all_mutations=(SACK_OFF_BY_ONE RETX_WINDOW ACCEPT_BAD_RKEY LOSS_NO_CUT LOSS_CUT_EVERY_ACK LOSS_IS_CONGESTION RTO_EVERY_PATH)

mutations=()
if [ "${1:-}" = --mutations ]; then
	shift
	mutations=("${@:-${all_mutations[@]}}")
	[ $# -gt 0 ] || mutations=("${all_mutations[@]}")
fi

"$top/scripts/setup.sh" build vm conformance
kver=$("$top/scripts/kver.sh" version 6.12)
kdir=${KDIR:-/lib/modules/$kver/build}

make -s -C "$top" --no-print-directory module-6.12
make -s -C "$kdir" M="$here/dut" W=1 modules
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 >/dev/null
(cd "$build" && ctest --output-on-failure -Q) || { echo "conformance: codec unit tests failed" >&2; exit 1; }
mkdir -p "$results"

# run_suite NAME [MUTANT_KO [FILTER]]: one guest; TAP, JUnit and the console in results/NAME.*
run_suite() {
	local name=$1 log=$results/$1.log rc=0
	shift
	"$top/tools/testing/vm/vm.sh" --name "conformance-$name" --timeout 600 \
		"$here/guest.sh" "${1:-}" "${2:-${CONF_FILTER:-*}}" "${CONF_FUZZ_ITERS:-}" \
		"${CONF_FUZZ_SEED:-}" >"$log" 2>&1 || rc=$?
	sed -n 's/^\[conformance-[^]]*\] //p' "$log" |
		sed -n '/^TAP version/,/^# conformance:/p' >"$results/$name.tap"
	sed -n 's/^\[conformance-[^]]*\] //p' "$log" |
		sed -n '/^=== JUNIT-BEGIN/,/^=== JUNIT-END/p' | sed '1d;$d' >"$results/$name.xml"
	return "$rc"
}

rc=0
echo "conformance: the suite against metaroce.ko (log: $results/normal.log)"
run_suite normal || rc=$?
cat "$results/normal.tap"
[ -s "$results/normal.tap" ] || { tail -n 40 "$results/normal.log"; rc=1; }
# A guest that crashed or warned fails the run even when every test passed.
[ "$rc" = 0 ] || grep -E 'BUG|WARNING|Oops|KASAN|FAIL' "$results/normal.log" | head -n 20

if [ ${#mutations[@]} -gt 0 ]; then
	: >"$results/mutations.txt"
	for m in "${mutations[@]}"; do
		src=$build/mutants/$m
		mkdir -p "$src"
		# Out-of-tree builds write objects next to the sources: one copy per mutation.
		rsync -a --delete-excluded --include='*/' --include='*.[ch]' --include=Kbuild \
			--exclude='*' "$top/Kbuild" "$top/drivers" "$top/include" "$src/"
		make -s -C "$kdir" M="$src" KCFLAGS="-DMETAROCE_MUTATION_$m" modules
		echo "conformance: mutation $m (log: $results/mutant-$m.log)"
		run_suite "mutant-$m" "$src/drivers/metaroce/metaroce.ko" || true
		caught=$(grep -E '^not ok ' "$results/mutant-$m.tap" | grep -v '# TODO' |
			sed -E 's/^not ok [0-9]+ - //' | paste -sd' ' - || true)
		# A known-gap test (# TODO: it can fail by chance here) counts, marked *, only
		# when it passed against the real module in this same run.
		gaps=$(grep -E '^not ok .*# TODO' "$results/mutant-$m.tap" |
			sed -E 's/^not ok [0-9]+ - ([^ ]+).*/\1/' | while read -r t; do
				if grep -qE "^ok [0-9]+ - $t( |\$)" "$results/normal.tap"; then echo "$t*"; fi
			done | paste -sd' ' - || true)
		caught=$caught${caught:+${gaps:+ }}$gaps
		if [ -n "$caught" ]; then
			echo "$m caught $caught" | tee -a "$results/mutations.txt"
		else
			echo "$m missed" | tee -a "$results/mutations.txt"
			rc=1
		fi
	done
fi

# A filtered run is not a compliance result: the table comes from whole runs only.
if [ "${CONF_FILTER:-*}" = "*" ] && [ -s "$results/normal.tap" ]; then
	"$here/gen-compliance.sh" "$results" >"$top/Documentation/metaroce/compliance.rst"
	echo "conformance: wrote Documentation/metaroce/compliance.rst"
fi
grep -E '^# conformance:' "$results/normal.tap" || echo "# conformance: no result"
exit "$rc"
