// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The memory of the streams a test opens: mr_conn_open_stream takes it from its caller.
#pragma once

#include <memory>
#include <vector>

extern "C" {
#include "core/conn.h"
}

// Freed with the pool: hold it beside (declared before) the engines that use it.
struct StreamPool {
	std::vector<std::unique_ptr<mr_stream>> mem;

	int open(mr_conn *c, u32 local_id, u32 peer_id)
	{
		mem.push_back(std::make_unique<mr_stream>());
		return mr_conn_open_stream(c, local_id, peer_id, mem.back().get());
	}
};
