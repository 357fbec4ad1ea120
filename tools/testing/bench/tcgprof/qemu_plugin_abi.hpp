// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The part of QEMU's TCG plugin interface that tcgprof uses, as QEMU 7.2
 * (Debian 12's qemu-system-x86) defines it: plugin API version 1.  Debian
 * ships no header for it, so these are the interface's declarations
 * (names, types, enumerator values), nothing more.  The functions are
 * resolved against the QEMU binary when it loads the plugin.
 */
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using qemu_plugin_id_t = uint64_t;

struct qemu_info_t;	/* not read: we take no target facts from it */
struct qemu_plugin_tb;

enum qemu_plugin_op {
	QEMU_PLUGIN_INLINE_ADD_U64,
};

using qemu_plugin_vcpu_tb_trans_cb_t = void (*)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
using qemu_plugin_udata_cb_t = void (*)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);

}  // extern "C"

/* The API version this plugin is written against (QEMU 7.2 accepts 0 and 1). */
inline constexpr int tcgprof_plugin_api_version = 1;
