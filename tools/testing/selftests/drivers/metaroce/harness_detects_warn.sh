#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --expect-fail dmesg --no-module
# Self-test of the guest harness: this test itself passes, but the kernel logs a
# WARNING, so the harness must fail the run (run.sh expects that failure).
. "$(dirname "$0")/lib.sh"

check "load a module that WARNs" insmod "$MR_TOP/tools/testing/vm/warn/mr_harness_warn.ko"
check "the warning is in dmesg" sh -c 'dmesg | grep -q "deliberate warning"'
done_testing
