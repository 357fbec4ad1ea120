# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# MetaRoCE for Linux: build, lint and test entry points.  `make help` lists them.
#
# Every target installs what it needs on first use (scripts/setup.sh).
# KDIR=/path/to/kernel/build overrides the Debian 6.12 headers.

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD := $(TOP)/build
# Caches that outlive a clone (kernel source tree, KUnit build, guest initramfs).
export METAROCE_CACHE ?= /var/cache/metaroce

KBUILD_FLAGS := W=1
# The kernel build directory, resolved in the shell: make expands a whole recipe
# before running its first line, i.e. before setup.sh has installed the headers.
KDIR_612 = $${KDIR:-/lib/modules/$$($(TOP)/scripts/kver.sh version 6.12)/build}
KDIR_61 = /lib/modules/$$($(TOP)/scripts/kver.sh version 6.1)/build

.PHONY: all modules module-6.1 clean lint unit kunit selftests selftests-debug fuzz-guest check provider \
	conformance conformance-mutations bench profile demo help

all: modules

modules:
	@scripts/setup.sh build
	$(MAKE) -C "$(KDIR_612)" M=$(TOP) $(KBUILD_FLAGS) modules

# Compile check against bookworm's default 6.1 series, in a copy of the tree
# because out-of-tree builds write their objects next to the sources.
module-6.1:
	@scripts/setup.sh build build61
	@mkdir -p $(BUILD)/k6.1
	@rsync -a --delete-excluded --include='*/' --include='*.[ch]' --include=Kbuild --exclude='*' \
		$(TOP)/Kbuild $(TOP)/drivers $(TOP)/include $(BUILD)/k6.1/
	$(MAKE) -C "$(KDIR_61)" M=$(BUILD)/k6.1 $(KBUILD_FLAGS) modules

lint:
	@scripts/lint.sh

unit:
	@scripts/run-unit.sh

kunit:
	@scripts/run-kunit.sh

# Guest tests; one by name: make selftests T=link_lifecycle
selftests: modules
	@tools/testing/selftests/drivers/metaroce/run.sh $(T)

# The guest tests on a debug kernel (KASAN, lockdep, kmemleak, UBSAN) built once from
# Debian's linux-source-6.12 into the cache; one by name: make selftests-debug T=...
selftests-debug:
	@scripts/selftests-debug.sh $(T)

check:
	@scripts/check.sh

demo:
	@tools/testing/demo/demo.sh

# The rdma-core provider (userspace/providers/metaroce) against rdma-core's source.
provider:
	@scripts/provider.sh

# MetaRoCE, rxe and TCP on one 8-link fabric of two guests; QUICK=1 for a short run.
bench:
	@QUICK=$(QUICK) tools/testing/bench/bench.sh

# perf on both guests during one bulk Write run of MetaRoCE and of rxe (one wire).
profile:
	@tools/testing/bench/profile.sh

# The compliance suite (tools/testing/conformance) against metaroce.ko in a guest; writes
# Documentation/metaroce/compliance.rst.  The mutation check builds the module once per
# test-only mutation and runs the suite against each (slower: not part of make check).
conformance:
	@CONF_FILTER='$(or $(T),$(CONF_FILTER))' tools/testing/conformance/run.sh

conformance-mutations:
	@tools/testing/conformance/run.sh --mutations

# The receive-path fuzzer alone, long: FUZZ_ITERS packets (default 200000), FUZZ_SEED.
fuzz-guest:
	@CONF_FILTER='FuzzTest.*' CONF_FUZZ_ITERS=$(or $(FUZZ_ITERS),200000) \
		CONF_FUZZ_SEED=$(or $(FUZZ_SEED),1) tools/testing/conformance/run.sh

clean:
	$(MAKE) -C "$(KDIR_612)" M=$(TOP) clean 2>/dev/null || true
	rm -rf $(BUILD)

help:
	@echo "make            build drivers/metaroce/metaroce.ko (Debian 6.12; KDIR= overrides)"
	@echo "make module-6.1 compile check against Debian's 6.1 headers"
	@echo "make lint       checkpatch --strict, sparse (C=2), W=1 on 6.12 and 6.1"
	@echo "make unit       C++/GoogleTest tests of core/ (CMake + CTest)"
	@echo "make kunit      KUnit suites of core/ in UML (kunit.py)"
	@echo "make provider   the rdma-core provider: build/provider/libmetaroce-rdmav34.so"
	@echo "make selftests  guest tests in QEMU; T=name runs one"
	@echo "make selftests-debug  the same on a KASAN/lockdep/kmemleak/UBSAN kernel (built once)"
	@echo "make conformance  the compliance suite against the module in a guest;"
	@echo "                 regenerates Documentation/metaroce/compliance.rst"
	@echo "make conformance-mutations  the same against each planted mutation"
	@echo "make check      all of the above; prints 'N passed, N failed'"
	@echo "make bench      MetaRoCE vs rxe vs TCP on an 8-link fabric (QUICK=1: short)"
	@echo "make demo       boot a guest, run MetaRoCE and rxe at 0% and 1% loss, print the table"
