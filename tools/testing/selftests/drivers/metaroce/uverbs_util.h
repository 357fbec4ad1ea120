/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the user-Verbs test programs (uverbs_hostile.c, uverbs_srq.c) share. */
#ifndef UVERBS_UTIL_H
#define UVERBS_UTIL_H

#include <infiniband/verbs.h>

extern int failures;	/* expect() calls that failed */

void expect(int cond, const char *what);
void die(const char *what) __attribute__((noreturn));
struct ibv_context *open_dev(const char *name);
/* Moves two RC QPs in INIT, qa on GID index gid_a and qb on gid_b, to RTS towards each other. */
void connect_pair(struct ibv_qp *qa, int gid_a, struct ibv_qp *qb, int gid_b);
/*
 * Waits for n completions, up to 60000 sleeps of 1 ms: counted, not timed,
 * because a loaded TCG guest's clock may jump.  Returns how many came.
 */
int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n);

#endif
