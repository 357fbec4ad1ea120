// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The tracepoints of trace.h are instantiated here. */

#define CREATE_TRACE_POINTS
#include "trace.h"
