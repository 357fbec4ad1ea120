#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs the guest tests, each in fresh QEMU guests; names select tests.
#   run.sh [NAME...]     e.g. run.sh link_errors
# A test's "# vm: ..." header line holds its harness options (--pair,
# --expect-fail, --timeout S, ...); a "# needs: provider" line builds the
# rdma-core provider first (make provider), "# needs: deb" the Debian packages
# (make deb, cached while its inputs are unchanged), and the test fails if
# that cannot be done.  A test with a "# run: by name" line runs only when
# named (too slow for make check; its make target names it).
# Prints "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../../../.." && pwd)
vm=$top/tools/testing/vm/vm.sh
# Guest tests boot with the kernel's memory and lockup checks (vm.sh); VM_DEBUG=0 skips them.
export VM_DEBUG=${VM_DEBUG:-1}

kver=$("$top/scripts/kver.sh" version 6.12) || exit 1
# VM_KDIR: the guests boot the kernel built there (scripts/selftests-debug.sh).
kdir=${VM_KDIR:-/lib/modules/$kver/build}
# Test modules: the harness self-test's warning module, the kernel Verbs traffic module.
for mod in "$top/tools/testing/vm/warn" "$here/ktraffic"; do
	make -s -C "$kdir" M="$mod" W=1 modules >/dev/null || {
		echo "run.sh: cannot build the test module in $mod" >&2
		exit 1
	}
done

if [ $# -gt 0 ]; then
	tests=()
	for n in "$@"; do
		f=$here/${n%.sh}.sh
		[ -f "$f" ] || { echo "run.sh: no test '$n' in $here" >&2; exit 2; }
		tests+=("$f")
	done
else
	mapfile -t tests < <(ls "$here"/*.sh | grep -v -e '/lib.sh$' -e '/run.sh$')
	for i in "${!tests[@]}"; do
		if grep -q '^# run: by name' "${tests[$i]}"; then
			echo "run.sh: $(basename "${tests[$i]}" .sh) runs only by name"
			unset 'tests[i]'
		fi
	done
fi

passed=0 failed=0 failures=() provider_rc='' deb_rc=''
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	read -ra opts < <(sed -n 's/^# vm: //p' "$t" | head -n1)
	start=$SECONDS
	echo "--- $name"
	if grep -qx '# needs: provider' "$t"; then
		if [ -z "$provider_rc" ]; then
			"$top/scripts/provider.sh"
			provider_rc=$?
		fi
		# Never test a stale provider left by an earlier build.
		if [ "$provider_rc" != 0 ]; then
			echo "$name: needs the rdma-core provider, which could not be built (see above)"
			failed=$((failed + 1))
			failures+=("$name")
			echo "FAIL $name ($((SECONDS - start)) s)"
			continue
		fi
	fi
	if grep -qx '# needs: deb' "$t"; then
		if [ -z "$deb_rc" ]; then
			"$top/scripts/deb.sh"
			deb_rc=$?
		fi
		if [ "$deb_rc" != 0 ]; then
			echo "$name: needs the Debian packages, which could not be built (see above)"
			failed=$((failed + 1))
			failures+=("$name")
			echo "FAIL $name ($((SECONDS - start)) s)"
			continue
		fi
	fi
	if "$vm" "${opts[@]}" "$t"; then
		passed=$((passed + 1))
		echo "PASS $name ($((SECONDS - start)) s)"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "FAIL $name ($((SECONDS - start)) s)"
	fi
done
[ $failed -eq 0 ] || echo "failed: ${failures[*]}"
echo "selftests: $passed passed, $failed failed"
[ $failed -eq 0 ]
