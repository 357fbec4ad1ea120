#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --no-module --mem 2048 --timeout 1800
# needs: deb
# run: by name (make check-install): DKMS compiles the module in the TCG guest
# and depmod reads every module twice: 19 to 26 minutes here, more than make check has.
# Installed like any Debian driver: a guest with nothing of MetaRoCE installed
# (no module, no provider, no .driver file: vm.sh --no-module) installs the
# packages of make deb with apt, DKMS builds the module there against the
# guest kernel's headers, then modprobe, rdma link add, ibv_devices,
# ib_write_bw and a data-checked ibv_rc_pingpong run between two network
# namespaces with no RDMAV_DRIVERS and nothing taken from the source tree;
# apt purge then leaves nothing behind.
. "$(dirname "$0")/lib.sh"

kver=$(uname -r)
debs=$MR_TOP/build/deb
pkgs=(metaroce-dkms ibverbs-provider-metaroce)
unset RDMAV_DRIVERS
log "kernel $kver"
indent() { sed 's/^/#   /'; }
# server_maps PATTERN: the running ib_write_bw maps a file whose path has PATTERN.
# shellcheck disable=SC2317  # called through wait_for
server_maps() {
	local pid
	pid=$(pgrep -n -x ib_write_bw) && grep -qF "$1" "/proc/$pid/maps"
}

# What the packages own (taken from the .deb files, not from the tree's scripts).
provider_so=$(dpkg-deb -c "$debs"/ibverbs-provider-metaroce_*.deb | awk '{ print $6 }' |
	sed -n 's|^\.\(/.*/libmetaroce-rdmav[0-9]*\.so\)$|\1|p')
driver_file=/etc/libibverbs.d/metaroce.driver
check "the provider package ships a provider library ($provider_so)" test -n "$provider_so"

# nothing_installed WHEN: no trace of MetaRoCE on the system.
nothing_installed() {
	local p
	for p in "${pkgs[@]}"; do
		check_eq "$1: package $p not installed" "" \
			"$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -vx not-installed)"
	done
	check_fails "$1: modinfo finds no metaroce module" "not found" modinfo metaroce
	check_eq "$1: no metaroce module file under /lib/modules" "" \
		"$(find /lib/modules/ -name 'metaroce.ko*' 2>/dev/null)"
	check_eq "$1: no DKMS source or state" "" \
		"$(ls -d /usr/src/metaroce-* /var/lib/dkms/metaroce 2>/dev/null)"
	check "$1: no provider library" test ! -e "$provider_so"
	check "$1: no $driver_file" test ! -e "$driver_file"
	check_eq "$1: no metaroce manual page" "" "$(man -w metaroce 2>/dev/null)"
}

nothing_installed before
topo_veth_pair
check_fails "before: rdma link add cannot load a module" "" \
	ip netns exec h1 rdma link add mr0 type metaroce netdev v1

# The packages are installed from a copy: after this, nothing refers to the tree.
mkdir -p /tmp/debs
cp "$debs"/metaroce-dkms_*_all.deb "$debs"/ibverbs-provider-metaroce_*_amd64.deb /tmp/debs/
# man-db's trigger would re-index every manual page over 9p: not what is tested.
rm -f /var/lib/man-db/auto-update
t0=$SECONDS
# As the README says; the guest has no route out, so apt may fetch nothing else.
out=$(cd /tmp/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Use-Pty=0 \
	./metaroce-dkms_*_all.deb ./ibverbs-provider-metaroce_*_amd64.deb 2>&1)
rc=$?
indent <<<"$out" | tail -n 25
log "apt-get install (with the DKMS build) took $((SECONDS - t0)) s"
check_eq "apt-get install of both packages succeeds" 0 "$rc"
for p in "${pkgs[@]}"; do
	check_eq "package $p installed" installed "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)"
done
version=$(dpkg-query -W -f='${source:Upstream-Version}' metaroce-dkms)
check "dkms status: metaroce/$version installed for $kver" \
	grep -q "^metaroce/$version, $kver, x86_64: installed" <<<"$(dkms status metaroce 2>&1)"
ko=$(modinfo -n metaroce 2>/dev/null)
check_eq "modinfo finds the DKMS module (xz-compressed or not)" \
	"/lib/modules/$kver/updates/dkms/metaroce.ko" "${ko%.xz}"
check_eq "built for the running kernel" "$kver" "$(modinfo -F vermagic metaroce | awk '{ print $1 }')"
check_eq "signed by DKMS's machine owner key (Secure Boot)" "DKMS module signing key" \
	"$(modinfo -F signer metaroce)"
check "the provider library is installed" test -f "$provider_so"
check_eq "the driver file names the provider" "driver metaroce" "$(cat "$driver_file" 2>/dev/null)"
check "man -w metaroce finds the manual page" sh -c 'man -w metaroce | grep -q "/man7/metaroce\.7"'

check "modprobe metaroce" modprobe metaroce
check_eq "default UDP port as the uapi header says" "$MR_UDP_PORT" \
	"$(cat /sys/module/metaroce/parameters/udp_port)"
veth_devices
ibv_devices_list mr0 mr1

# ib_write_bw: the server in h2, the client in h1, perftest's TCP exchange over the veth.
ip netns exec h2 timeout 120 ib_write_bw -d mr1 -x "$g1" -s 65536 -n 200 -F >/tmp/bw-server.out 2>&1 &
server=$!
check "the server loaded the installed provider ($provider_so)" wait_for 30 server_maps "$provider_so"
check "nothing from the source tree in the server" sh -c \
	"! grep -F '$MR_TOP' /proc/$(pgrep -n -x ib_write_bw)/maps"
client_connect 5 ip netns exec h1 timeout 120 ib_write_bw -d mr0 -x "$g0" -s 65536 -n 200 -F \
	198.18.1.2
out=$CLIENT_OUT rc=$CLIENT_RC
indent <<<"$out" | tail -n 6
check_eq "ib_write_bw client completes" 0 "$rc"
wait "$server"
check_eq "ib_write_bw server completes" 0 "$?"
bw=$(awk '$1 == 65536 && $2 == 200 { print $4 }' <<<"$out")
log "ib_write_bw 64 KiB x 200: ${bw:-?} MB/s"
check "ib_write_bw reports a bandwidth" test -n "$bw"

# ibv_rc_pingpong -c: the client fills its buffer with a pattern before each send, the
# server checks what it received (and says "invalid data" if it does not match).
ip netns exec h2 timeout 120 ibv_rc_pingpong -d mr1 -g "$g1" -s 4096 -n 200 -c >/tmp/pp-server.out 2>&1 &
server=$!
sleep 1
client_connect 5 ip netns exec h1 timeout 120 ibv_rc_pingpong -d mr0 -g "$g0" -s 4096 -n 200 -c \
	198.18.1.2
out=$CLIENT_OUT rc=$CLIENT_RC
indent <<<"$out" | tail -n 3
check_eq "ibv_rc_pingpong -c client completes" 0 "$rc"
wait "$server"
check_eq "ibv_rc_pingpong -c server completes" 0 "$?"
sed 's/^/#   server: /' /tmp/pp-server.out | tail -n 3
check "the server checked the data it received" sh -c \
	'! grep -q "invalid data" /tmp/pp-server.out && grep -q "^200 iters in" /tmp/pp-server.out'
check "4096-byte messages both ways, 200 times" grep -q "^1638400 bytes in" /tmp/pp-server.out

check "rdma link delete mr0" ip netns exec h1 rdma link delete mr0
check "rdma link delete mr1" ip netns exec h2 rdma link delete mr1
check "rmmod metaroce" rmmod metaroce

t0=$SECONDS
out=$(DEBIAN_FRONTEND=noninteractive apt-get purge -y -o Dpkg::Use-Pty=0 "${pkgs[@]}" 2>&1)
rc=$?
indent <<<"$out" | tail -n 12
log "apt-get purge took $((SECONDS - t0)) s"
check_eq "apt-get purge of both packages succeeds" 0 "$rc"
nothing_installed after
check_fails "after: modprobe metaroce fails" "not found" modprobe metaroce
check_fails "after: rdma link add cannot load a module" "" \
	ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check_eq "after: ibv_devices lists no MetaRoCE device" "" \
	"$(ibv_devices 2>/dev/null | grep -E '^[[:space:]]*mr[01][[:space:]]')"
done_testing
