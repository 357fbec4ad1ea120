// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The protocol engine's C headers, wrapped for the C++ tests.
#pragma once

extern "C" {
#include "core/codec.h"
#include "core/tests/codec_cases.h"
}
