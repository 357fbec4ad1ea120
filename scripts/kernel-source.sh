#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Prints the path of Debian's 6.12 kernel source tree, unpacked once into the cache
# (checkpatch.pl for make lint, the UML kernel for make kunit).
set -euo pipefail
cache=${METAROCE_CACHE:-/var/cache/metaroce}
tarball=/usr/src/linux-source-6.12.tar.xz
src=$cache/linux-source-6.12
stamp=$src/.metaroce-from
[ -e "$tarball" ] || { echo "kernel-source.sh: $tarball missing (scripts/setup.sh lint)" >&2; exit 1; }
want=$(stat -c '%s %Y' "$tarball")
if [ ! -e "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	echo "unpacking $tarball into $cache" >&2
	rm -rf "$src" "$cache/kunit-build"
	mkdir -p "$cache"
	tar -C "$cache" -xf "$tarball"
	echo "$want" >"$stamp"
fi
echo "$src"
