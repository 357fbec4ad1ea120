/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Handshake agreement cases shared by GoogleTest and KUnit: two offers in, agreement out. */
#ifndef MR_TESTS_HS_CASES_H
#define MR_TESTS_HS_CASES_H

#include "../handshake.h"

struct mr_hs_offer {
	u8 ver_min;
	u8 ver_max;
	u8 max_paths;
	u16 pmtu;
};

struct mr_hs_case {
	const char *name;
	const char *clause;
	struct mr_hs_offer requester;
	struct mr_hs_offer responder;
	bool accept;
	u8 ver;
	u8 n_paths;
	u16 pmtu;
};

static const struct mr_hs_case mr_hs_cases[] = {
	{ "equal offers agree on themselves", "MR-CONN-4",
	  { 1, 1, 8, 4096 }, { 1, 1, 8, 4096 }, true, 1, 8, 4096 },
	{ "fewer paths at the responder win", "MR-CONN-4",
	  { 1, 1, 16, 4096 }, { 1, 1, 4, 4096 }, true, 1, 4, 4096 },
	{ "fewer paths at the requester win", "MR-CONN-4",
	  { 1, 1, 2, 4096 }, { 1, 1, 16, 4096 }, true, 1, 2, 4096 },
	{ "the smaller pmtu wins", "MR-CONN-4",
	  { 1, 1, 8, 1024 }, { 1, 1, 8, 9000 }, true, 1, 8, 1024 },
	{ "a newer requester meets an older responder", "MR-CONN-4",
	  { 1, 3, 8, 4096 }, { 1, 1, 8, 4096 }, true, 1, 8, 4096 },
	{ "the highest common version is chosen", "MR-CONN-4",
	  { 1, 2, 8, 4096 }, { 1, 3, 8, 4096 }, true, 2, 8, 4096 },
	{ "no common version is rejected", "MR-CONN-4",
	  { 2, 3, 8, 4096 }, { 1, 1, 8, 4096 }, false, 0, 0, 0 },
	{ "zero paths are rejected", "MR-CONN-4",
	  { 1, 1, 0, 4096 }, { 1, 1, 8, 4096 }, false, 0, 0, 0 },
	{ "a pmtu below 256 is rejected", "MR-CONN-6",
	  { 1, 1, 8, 200 }, { 1, 1, 8, 4096 }, false, 0, 0, 0 },
};

#define MR_HS_NR_CASES (sizeof(mr_hs_cases) / sizeof(*mr_hs_cases))

/* Run one case through mr_hs_connect/accept; the verdict goes to *hs_b. */
static inline enum mr_hs_event mr_hs_case_run(const struct mr_hs_case *c, struct mr_hs *a,
					      struct mr_hs *b, struct mr_pkt *pkt)
{
	struct mr_hs_local la, lb;

	mr_hs_local_defaults(&la, 0x1111);
	mr_hs_local_defaults(&lb, 0x2222);
	la.ver_min = c->requester.ver_min;
	la.ver_max = c->requester.ver_max;
	la.max_paths = c->requester.max_paths;
	la.pmtu = c->requester.pmtu;
	lb.ver_min = c->responder.ver_min;
	lb.ver_max = c->responder.ver_max;
	lb.max_paths = c->responder.max_paths;
	lb.pmtu = c->responder.pmtu;
	mr_hs_connect(a, &la, 0, 0xa, 100);
	mr_hs_next_packet(a, 0, pkt);
	return mr_hs_accept(b, &lb, pkt, 0xb, 200);
}

#endif /* MR_TESTS_HS_CASES_H */
