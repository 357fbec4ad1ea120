#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Checks that a built provider loads into the system's libibverbs.
#   provider-check.sh LIB.so
# The provider registers itself from a constructor through
# verbs_register_driver_<pabi>, and every symbol it takes from libibverbs must
# exist there with the same version; it must export nothing.  Run by make
# provider and by the Debian package build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
so=${1:?usage: provider-check.sh LIB.so}

die() { echo "provider-check.sh: $*" >&2; exit 1; }

[ -f "$so" ] || die "$so is missing"
pabi=$("$here/ibverbs-paths.sh" pabi)
# awk reads all of ldconfig's output: an early exit would SIGPIPE it under pipefail.
sys=${LIBIBVERBS:-$(ldconfig -p | awk '$1 == "libibverbs.so.1" && /x86-64/ && !found { print $NF; found = 1 }')}
[ -n "$sys" ] || die "the system has no libibverbs.so.1 (apt-get install libibverbs1)"
undef=$(nm -D --undefined-only --with-symbol-versions "$so" | awk '{ print $2 }' | grep '@IBVERBS_' | sort -u)
grep -qx "verbs_register_driver_$pabi@IBVERBS_PRIVATE_$pabi" <<<"$undef" ||
	die "$so does not register through verbs_register_driver_$pabi (the private ABI of $sys)"
have=$(nm -D --defined-only --with-symbol-versions "$sys" | awk '{ print $3 }' | sed 's/@@*/@/' | sort -u)
missing=$(comm -23 <(echo "$undef") <(echo "$have"))
[ -z "$missing" ] || die "$so needs symbols that $sys lacks: $missing"
exported=$(nm -D --defined-only "$so" | awk '{ print $3 }' | grep -v -e '^_init$' -e '^_fini$' || true)
[ -z "$exported" ] || die "$so exports symbols (providers must export none): $exported"
python3 - "$sys" "$so" <<'EOF' || die "$so does not load into $sys"
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(sys.argv[2])	# RTLD_NOW: every symbol must resolve; runs the constructor
EOF
echo "provider-check.sh: $so loads into $sys (IBVERBS_PRIVATE_$pabi)"
