#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make lint: checkpatch --strict, sparse, and warning-free W=1 builds for 6.12 and 6.1.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" build build61 lint || exit 1
src=$("$top/scripts/kernel-source.sh") || exit 1
cd "$top" || exit 1
fails=0

step() { echo "lint: $*"; }
bad() { echo "lint: FAIL: $*"; fails=$((fails + 1)); }

step "checkpatch --strict"
checkpatch() {
	"$src/scripts/checkpatch.pl" --strict --no-tree --terse --show-types --file "$@" 2>&1
}
mapfile -t files < <(git ls-files 'drivers/metaroce/*.[ch]' 'include/uapi/*.h' 'tools/testing/kunit/*.c' \
	'tools/testing/vm/warn/*.c' 'tools/testing/selftests/drivers/metaroce/ktraffic/*.[ch]' \
	'tools/testing/conformance/dut/*.c' |
	grep -v -e '/compat\.h$' -e '/trace\.h$')
out=$(checkpatch --ignore FILE_PATH_CHANGES "${files[@]}")
# The compat header is the one place that may test the kernel version.
out+=$(checkpatch --ignore FILE_PATH_CHANGES,LINUX_VERSION_CODE,CONSTANT_COMPARISON,MACRO_ARG_UNUSED \
	drivers/metaroce/compat.h)
# Trace event definitions are macro calls laid out the way the kernel's own are.
out+=$(checkpatch --ignore FILE_PATH_CHANGES,PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE \
	drivers/metaroce/trace.h)
if grep -qE '(ERROR|WARNING|CHECK):' <<<"$out"; then
	grep -E '(ERROR|WARNING|CHECK):' <<<"$out"
	bad "checkpatch"
fi

step "the glue's layering (each file calls only the files below it)"
"$top/scripts/layering.sh" || bad "layering"

kbuild() { # series extra-make-args...
	local series=$1 kver dir=$top
	shift
	kver=$("$top/scripts/kver.sh" version "$series")
	if [ "$series" = 6.1 ]; then
		dir=$top/build/k6.1
		mkdir -p "$dir"
		rsync -a --delete-excluded --include='*/' --include='*.[ch]' --include=Kbuild \
			--exclude='*' "$top/Kbuild" "$top/drivers" "$top/include" "$dir/"
	fi
	# Rebuild everything so every file is compiled and checked.
	make -s -C "/lib/modules/$kver/build" M="$dir" clean >/dev/null 2>&1
	make -j"$(nproc)" -C "/lib/modules/$kver/build" M="$dir" W=1 "$@" modules 2>&1
}

for series in 6.12 6.1; do
	step "W=1 build against $series"
	out=$(kbuild "$series")
	rc=$?
	if [ $rc -ne 0 ] || grep -qiE 'warning:|error:' <<<"$out"; then
		grep -iE -A3 'warning:|error:' <<<"$out" | head -40
		bad "W=1 build against $series"
	fi
done

step "sparse (C=2) against 6.12"
out=$(kbuild 6.12 C=2 CHECK="sparse -Wno-unknown-attribute")
# No grep -q at the end of a pipe: under pipefail its early exit could hide a finding.
found=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' <<<"$out" | grep -v '^/usr/src/' || true)
if [ -n "$found" ]; then
	echo "$found"
	bad "sparse"
fi

if [ $fails -ne 0 ]; then
	echo "lint: $fails check(s) failed"
	exit 1
fi
echo "lint: clean"
