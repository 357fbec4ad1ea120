# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# MetaRoCE for Linux: build, lint and test entry points.  `make help` lists them.
#
# Every target installs what it needs on first use (scripts/setup.sh).
# `make` builds for the running kernel when its headers are installed, else for
# Debian's 6.12 (scripts/kdir.sh; KVER=release or KDIR=/path/to/build overrides);
# the tests build for Debian's 6.12, the kernel the guests boot (module-6.12).

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD := $(TOP)/build
# Caches that outlive a clone (kernel source tree, KUnit build, guest initramfs).
export METAROCE_CACHE ?= /var/cache/metaroce

KBUILD_FLAGS := W=1
# Both cores for a module build unless make was given its own -j.
KBUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))
# The kernel build directory, resolved in the shell: make expands a whole recipe
# before running its first line, i.e. before setup.sh has installed the headers.
KDIR_612 = $${KDIR:-/lib/modules/$$($(TOP)/scripts/kver.sh version 6.12)/build}
KDIR_61 = /lib/modules/$$($(TOP)/scripts/kver.sh version 6.1)/build

.PHONY: all modules module-6.12 module-6.1 clean lint unit kunit selftests selftests-debug \
	fuzz-guest check provider conformance conformance-mutations bench profile demo help \
	man install install-module install-provider install-man uninstall dkms-install \
	dkms-uninstall deb check-install

all: modules

# For the running kernel (or KVER=, KDIR=): what make install installs.
modules:
	@kdir=$$(scripts/kdir.sh) && echo "make: metaroce.ko for $$kdir" && \
		$(MAKE) $(KBUILD_JOBS) -C "$$kdir" M=$(TOP) $(KBUILD_FLAGS) modules

# For Debian's 6.12, the kernel the test guests boot.
module-6.12:
	@scripts/setup.sh build
	$(MAKE) $(KBUILD_JOBS) -C "$(KDIR_612)" M=$(TOP) $(KBUILD_FLAGS) modules

# Compile check against bookworm's default 6.1 series, in a copy of the tree
# because out-of-tree builds write their objects next to the sources.
module-6.1:
	@scripts/setup.sh build build61
	@mkdir -p $(BUILD)/k6.1
	@rsync -a --delete-excluded --include='*/' --include='*.[ch]' --include=Kbuild --exclude='*' \
		$(TOP)/Kbuild $(TOP)/drivers $(TOP)/include $(BUILD)/k6.1/
	$(MAKE) $(KBUILD_JOBS) -C "$(KDIR_61)" M=$(BUILD)/k6.1 $(KBUILD_FLAGS) modules

lint:
	@scripts/lint.sh

unit:
	@scripts/run-unit.sh

kunit:
	@scripts/run-kunit.sh

# Guest tests; one by name: make selftests T=link_lifecycle
selftests: module-6.12
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

# metaroce(7), made from Documentation/metaroce/admin-guide.rst.
man:
	@scripts/setup.sh man
	@scripts/man.sh $(BUILD)/man/metaroce.7

# The module (into /lib/modules/KVER/updates, then depmod), the provider (into
# libibverbs' provider directory, its .driver file into /etc/libibverbs.d) and the
# man page (PREFIX=/usr/local); DESTDIR honoured.  KVER: the built module's kernel.
install: install-module install-provider install-man
install-module: modules
	@scripts/install.sh install module
install-provider: provider
	@scripts/install.sh install provider
install-man: man
	@scripts/install.sh install man
uninstall:
	@scripts/install.sh uninstall

# The module's source in /usr/src/metaroce-VERSION, built and installed by DKMS for
# every kernel with headers (and rebuilt for new ones); dkms-uninstall removes it.
dkms-install:
	@scripts/setup.sh dkms
	@scripts/dkms.sh install
dkms-uninstall:
	@scripts/dkms.sh uninstall

# Debian packages metaroce-dkms and ibverbs-provider-metaroce, from the tracked
# files, into build/deb/ (with lintian's report); FORCE=1 rebuilds.
deb:
	@FORCE=$(FORCE) scripts/deb.sh

# The ways to install, each in a guest with nothing installed: the packages (DKMS
# builds the module there; selftest deb_install) and make install's step
# (make_install).  Too slow under TCG for make check.
check-install: module-6.12 man
	@tools/testing/selftests/drivers/metaroce/run.sh deb_install make_install

clean:
	$(MAKE) -C "$(KDIR_612)" M=$(TOP) clean 2>/dev/null || true
	rm -rf $(BUILD)

help:
	@echo "make            build drivers/metaroce/metaroce.ko for the running kernel (else"
	@echo "                Debian 6.12; KVER= or KDIR= overrides)"
	@echo "make install    install the module, the provider and metaroce(7); make uninstall"
	@echo "make dkms-install  the module under DKMS, for every kernel with headers"
	@echo "make deb        Debian packages metaroce-dkms and ibverbs-provider-metaroce in build/deb"
	@echo "make check-install  the packages and make install, each in a guest: install, use, remove"
	@echo "make man        metaroce(7) from Documentation/metaroce/admin-guide.rst"
	@echo "make module-6.12 build for Debian's 6.12, the kernel the test guests boot"
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
