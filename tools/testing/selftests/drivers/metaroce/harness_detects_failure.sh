#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --expect-fail exit --no-module
# Self-test of the guest harness: a failing check must fail the run, with a
# clean kernel log.
. "$(dirname "$0")/lib.sh"

check "this check fails on purpose" false
done_testing
