// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The protocol engine's C headers, wrapped for the C++ tests.
#pragma once

extern "C" {
#include "core/codec.h"
#include "core/tests/codec_cases.h"
}

extern "C" {
#include "core/cc.h"
#include "core/conn.h"
#include "core/path.h"
#include "core/sack.h"
#include "core/stream.h"
#include "core/tests/sack_cases.h"
#include "core/handshake.h"
#include "core/tests/hs_cases.h"
#include "core/tests/nak_cases.h"
}

#include "stream_pool.hpp"
