#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --no-module --timeout 1200
# needs: provider
# run: by name (make check-install): depmod reads every module twice, minutes in TCG.
# make install's install step (scripts/install.sh, after make, make provider and
# make man built everything on the host) into a guest with nothing of MetaRoCE
# installed: the module is found by modprobe and rdma link's autoload, libibverbs
# loads the provider from its own directory without RDMAV_DRIVERS, data moves
# between two network namespaces; make uninstall's step then removes every file.
. "$(dirname "$0")/lib.sh"

top=$MR_TOP
kver=$(uname -r)
unset RDMAV_DRIVERS
indent() { sed 's/^/#   /'; }

provider_dir=$("$top/scripts/ibverbs-paths.sh" provider-dir)
pabi=$("$top/scripts/ibverbs-paths.sh" pabi)
provider_so=$provider_dir/libmetaroce-rdmav$pabi.so
files=("/lib/modules/$kver/updates/metaroce.ko" "$provider_so" /etc/libibverbs.d/metaroce.driver
	/usr/local/share/man/man7/metaroce.7)
check_eq "the module in the tree is built for this kernel" "$kver" \
	"$(modinfo -F vermagic "$top/drivers/metaroce/metaroce.ko" | awk '{ print $1 }')"
check "the man page is built" test -f "$top/build/man/metaroce.7"

none_left() { # when
	local f
	for f in "${files[@]}"; do
		check "$1: no $f" test ! -e "$f"
	done
	check_fails "$1: modinfo finds no metaroce module" "not found" modinfo metaroce
}
none_left before

out=$("$top/scripts/install.sh" install 2>&1)
check_eq "make install's step succeeds" 0 "$?"
indent <<<"$out"
for f in "${files[@]}"; do
	check "installed: $f" test -f "$f"
done
check_eq "modinfo finds the installed module" "/lib/modules/$kver/updates/metaroce.ko" \
	"$(modinfo -n metaroce 2>/dev/null)"
# man may name it through Debian's /usr/local/man -> share/man link.
check_eq "man -w metaroce finds the page in /usr/local" /usr/local/share/man/man7/metaroce.7 \
	"$(readlink -f "$(man -w metaroce 2>/dev/null)")"

# rdma link add loads the module by its alias, as depmod indexed it.
topo_veth_pair
check "the module is not loaded before rdma link add" test ! -d /sys/module/metaroce
veth_devices
check "rdma link add autoloaded the module" test -d /sys/module/metaroce
ibv_devices_list mr0 mr1

# ibv_rc_pingpong -c: the server checks the data it received.
ip netns exec h2 timeout 120 ibv_rc_pingpong -d mr1 -g "$g1" -s 4096 -n 100 -c >/tmp/pp-server.out 2>&1 &
server=$!
check "the server loaded the installed provider" wait_for 30 sh -c \
	"grep -qF '$provider_so' /proc/\$(pgrep -n -x ibv_rc_pingpong)/maps"
client_connect 5 ip netns exec h1 timeout 120 ibv_rc_pingpong -d mr0 -g "$g0" -s 4096 -n 100 -c \
	198.18.1.2
out=$CLIENT_OUT rc=$CLIENT_RC
indent <<<"$out" | tail -n 2
check_eq "ibv_rc_pingpong -c client completes" 0 "$rc"
wait "$server"
check_eq "ibv_rc_pingpong -c server completes" 0 "$?"
check "the server's data checked out" sh -c \
	'! grep -q "invalid data" /tmp/pp-server.out && grep -q "^100 iters in" /tmp/pp-server.out'

check "rdma link delete mr0" ip netns exec h1 rdma link delete mr0
check "rdma link delete mr1" ip netns exec h2 rdma link delete mr1
check "rmmod metaroce" rmmod metaroce

out=$("$top/scripts/install.sh" uninstall 2>&1)
check_eq "make uninstall's step succeeds" 0 "$?"
indent <<<"$out"
none_left after
check_fails "after: rdma link add cannot load a module" "" \
	ip netns exec h1 rdma link add mr0 type metaroce netdev v1
done_testing
