#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make demo: set up, build metaroce.ko, boot two guests on one wire, link devices, run traffic.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
echo "demo: installing what is missing and building metaroce.ko"
make -s -C "$top" modules
echo "demo: booting two QEMU guests joined by one virtual Ethernet wire"
"$top/tools/testing/vm/vm.sh" --pair --name demo --timeout 420 "$top/tools/testing/demo/demo-guest.sh"
