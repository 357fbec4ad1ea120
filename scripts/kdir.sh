#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The kernel build directory that `make` and `make install` use:
#   KDIR if set; else /lib/modules/$KVER/build if KVER is set; else the running
#   kernel's, when its headers are installed; else Debian's 6.12 (what the test
#   guests boot, scripts/kver.sh), whose headers scripts/setup.sh installs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "${KDIR:-}" ]; then
	echo "$KDIR"
elif [ -n "${KVER:-}" ]; then
	[ -d "/lib/modules/$KVER/build" ] || {
		echo "kdir.sh: no headers for $KVER in /lib/modules/$KVER/build (apt-get install linux-headers-$KVER)" >&2
		exit 1
	}
	echo "/lib/modules/$KVER/build"
elif [ -d "/lib/modules/$(uname -r)/build" ]; then
	echo "/lib/modules/$(uname -r)/build"
else
	echo "kdir.sh: no headers for the running kernel $(uname -r): building for Debian's 6.12" >&2
	"$here/setup.sh" build >&2
	echo "/lib/modules/$("$here/kver.sh" version 6.12)/build"
fi
