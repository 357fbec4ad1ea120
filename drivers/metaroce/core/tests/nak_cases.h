/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* NAK codes and the requester completion each must give, shared by GoogleTest and KUnit. */
#ifndef MR_TESTS_NAK_CASES_H
#define MR_TESTS_NAK_CASES_H

#include "../conn.h"

struct mr_nak_case {
	const char *name;
	const char *clause;
	u8 code;
	u8 status;	/* enum mr_wc_status of the failed WQE */
};

static const struct mr_nak_case mr_nak_cases[] = {
	{ "RNR exhausted", "MR-NAK-4", MR_NAK_RNR, MR_WC_RNR_RETRY_EXC_ERR },
	{ "invalid request", "MR-NAK-2", MR_NAK_INVALID_REQUEST, MR_WC_REM_INV_REQ_ERR },
	{ "bad rkey", "MR-NAK-2", MR_NAK_BAD_RKEY, MR_WC_REM_ACCESS_ERR },
	{ "out of bounds", "MR-NAK-2", MR_NAK_BOUNDS, MR_WC_REM_ACCESS_ERR },
	{ "access", "MR-NAK-2", MR_NAK_ACCESS, MR_WC_REM_ACCESS_ERR },
	{ "remote operation error", "MR-NAK-2", MR_NAK_REMOTE_OP_ERROR, MR_WC_REM_OP_ERR },
};

#define MR_NAK_NR_CASES (sizeof(mr_nak_cases) / sizeof(*mr_nak_cases))

#endif /* MR_TESTS_NAK_CASES_H */
