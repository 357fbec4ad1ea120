// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A QEMU TCG plugin that counts the guest instructions executed at each
 * translated block's address: an inline add per block execution (no call
 * out of the generated code), weighted by the block's length when a
 * snapshot is taken.  Snapshots are asked for from outside, while the guest
 * runs: creating DIR/snap.NAME makes the plugin write DIR/NAME.tsv (whole,
 * by rename) and remove the request.
 *
 *   qemu-system-x86_64 ... -plugin /path/libtcgprof.so,dir=/tmp/prof
 */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "qemu_plugin_abi.hpp"
#include "tcgprof.hpp"

namespace {

struct Block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t execs;	/* added to by the generated code */
};

std::mutex blocks_lock;
std::deque<Block> blocks;	/* a deque: a block's counter never moves */
std::filesystem::path dir;
std::atomic<bool> stopping{false};
std::thread poller;

void on_translate(qemu_plugin_id_t, struct qemu_plugin_tb *tb)
{
	std::lock_guard<std::mutex> g(blocks_lock);
	Block &b = blocks.emplace_back(Block{qemu_plugin_tb_vaddr(tb), qemu_plugin_tb_n_insns(tb), 0});

	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b.execs, 1);
}

tcgprof::Counts snapshot()
{
	std::lock_guard<std::mutex> g(blocks_lock);
	tcgprof::Counts c;

	for (Block &b : blocks) {
		uint64_t n = std::atomic_ref<uint64_t>(b.execs).load(std::memory_order_relaxed);

		if (n)
			c[b.vaddr] += n * b.insns;
	}
	return c;
}

void serve_requests()
{
	std::error_code ec;

	for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
		std::string f = e.path().filename().string();

		if (!f.starts_with("snap."))
			continue;
		std::string name = f.substr(5);
		std::filesystem::path tmp = dir / (name + ".tsv.tmp");
		{
			std::ofstream out(tmp);
			tcgprof::write_counts(out, snapshot());
		}
		std::filesystem::rename(tmp, dir / (name + ".tsv"), ec);
		std::filesystem::remove(e.path(), ec);
	}
}

void poll_loop()
{
	while (!stopping.load()) {
		serve_requests();
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
}

/* Stop the poller and serve what was asked for at the end; once. */
void finish()
{
	if (stopping.exchange(true))
		return;
	if (poller.joinable())
		poller.join();
	serve_requests();
}

void on_exit(qemu_plugin_id_t, void *)
{
	finish();
}

/*
 * QEMU may run its plugins' exit callbacks after this library's static
 * objects are destroyed, or not at all: a joinable std::thread destroyed
 * calls std::terminate() (QEMU then dies of SIGABRT at exit, after the
 * guest's run).  Declared last, this is destroyed first, while the blocks
 * and the directory still exist.
 */
struct Finisher {
	~Finisher() { finish(); }
} finisher;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int qemu_plugin_version = tcgprof_plugin_api_version;

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							     const struct qemu_info_t *, int argc,
							     char **argv)
{
	for (int i = 0; i < argc; i++) {
		std::string_view a(argv[i]);

		if (a.starts_with("dir="))
			dir = std::string(a.substr(4));
	}
	if (dir.empty()) {
		qemu_plugin_outs("tcgprof: needs dir=PATH\n");
		return -1;
	}
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit, nullptr);
	poller = std::thread(poll_loop);
	return 0;
}

}  // extern "C"
