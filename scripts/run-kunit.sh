#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make kunit: runs the core/ KUnit suites in a UML kernel built from Debian's 6.12 source.
# The source tree and the build directory are cached outside the clone
# ($METAROCE_CACHE, default /var/cache/metaroce), so later runs take seconds.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${METAROCE_CACHE:-/var/cache/metaroce}
"$top/scripts/setup.sh" kunit

src=$("$top/scripts/kernel-source.sh")

# Our suite as drivers/metaroce_kunit/, with a copy of core/ beside it.
dst=$src/drivers/metaroce_kunit
mkdir -p "$dst/core"
rsync -a --delete --exclude='*.o' --exclude='.*.cmd' "$top/drivers/metaroce/core/" "$dst/core/"
cp "$top/tools/testing/kunit/Kconfig" "$top/tools/testing/kunit/Makefile" \
	"$top/tools/testing/kunit/metaroce_core_kunit.c" "$dst/"
grep -q metaroce_kunit "$src/drivers/Makefile" ||
	echo 'obj-$(CONFIG_METAROCE_CORE_KUNIT_TEST) += metaroce_kunit/' >>"$src/drivers/Makefile"
if ! grep -q metaroce_kunit "$src/drivers/Kconfig"; then
	# before the final endmenu
	sed -i '$ d' "$src/drivers/Kconfig"
	printf 'source "drivers/metaroce_kunit/Kconfig"\n\nendmenu\n' >>"$src/drivers/Kconfig"
fi

cd "$src"
python3 tools/testing/kunit/kunit.py run --kunitconfig="$top/tools/testing/kunit/.kunitconfig" \
	--build_dir="$cache/kunit-build" --jobs="$(nproc)" "$@"
