#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# metaroce(7) from the admin guide, so that the two never disagree.
#   man.sh OUTPUT    e.g. man.sh build/man/metaroce.7
# Documentation/metaroce/admin-guide.rst is plain docutils reStructuredText (no
# Sphinx-only roles), so rst2man (python3-docutils) renders it; any docutils
# warning fails the build.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: man.sh OUTPUT}
rst2man=/usr/bin/rst2man
[ -x "$rst2man" ] || { echo "man.sh: $rst2man is missing (apt-get install python3-docutils)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
"$rst2man" --halt=warning --no-datestamp --no-generator \
	"$top/Documentation/metaroce/admin-guide.rst" "$out.tmp"
mv "$out.tmp" "$out"
