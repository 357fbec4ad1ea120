#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make demo: set up, build metaroce.ko and the traffic module, boot a guest, link
# MetaRoCE and rxe devices, run Writes at 0% and 1% loss, print the table.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
echo "demo: installing what is missing and building metaroce.ko"
make -s -C "$top" modules
kver=$("$top/scripts/kver.sh" version 6.12)
make -s -C "/lib/modules/$kver/build" M="$top/tools/testing/selftests/drivers/metaroce/ktraffic" \
	modules
echo "demo: booting a QEMU guest (TCG, about a minute of setup and traffic)"
"$top/tools/testing/vm/vm.sh" --name demo --timeout 600 "$top/tools/testing/demo/demo-guest.sh" |
	sed -n 's/^\[demo\] //p' | grep -v '^=== '
