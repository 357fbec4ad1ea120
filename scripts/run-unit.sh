#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make unit: C++/GoogleTest tests of core/ (and the fuzz target) with CMake and CTest.
#   run-unit.sh [ctest args...]   e.g. run-unit.sh -R codec
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" unit
cmake -S "$top" -B "$top/build/cmake" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$top/build/cmake" -j "$(nproc)"
ctest --test-dir "$top/build/cmake" --output-on-failure -j "$(nproc)" "$@"
