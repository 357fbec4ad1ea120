// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An MPI job that checks what it moves (selftest mpi): MPI_Allreduce and
 * MPI_Alltoall of patterns every rank can predict, small (eager) and large
 * (rendezvous: RDMA READ or WRITE under UCX) messages, over several rounds.
 * Every element is compared; the job fails if any rank saw one wrong.
 *
 *   mpi_check [ROUNDS]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The value rank `from` puts in element i of its block for rank `to` in round r. */
static uint64_t a2a_value(int from, int to, size_t i, int r)
{
	return (uint64_t)from << 48 | (uint64_t)to << 32 | (uint64_t)(i * 7 + (size_t)r);
}

static long check_allreduce(int rank, int size, size_t n, int r)
{
	uint64_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
	long bad = 0;
	size_t i;

	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < n; i++)
		in[i] = (uint64_t)rank * 1000003u + i * 31u + (uint64_t)r;
	MPI_Allreduce(in, out, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		/* sum over ranks k of k * 1000003 + i * 31 + r */
		uint64_t want = (uint64_t)size * (size - 1) / 2 * 1000003u +
				(uint64_t)size * (i * 31u + (uint64_t)r);

		if (out[i] != want && bad++ < 3)
			fprintf(stderr, "rank %d: allreduce n=%zu round %d element %zu: %llu, want %llu\n",
				rank, n, r, i, (unsigned long long)out[i], (unsigned long long)want);
	}
	free(in);
	free(out);
	return bad;
}

static long check_alltoall(int rank, int size, size_t n, int r)
{
	uint64_t *in = malloc(n * size * sizeof(*in)), *out = malloc(n * size * sizeof(*out));
	long bad = 0;
	size_t i;
	int k;

	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (k = 0; k < size; k++)
		for (i = 0; i < n; i++) {
			in[k * n + i] = a2a_value(rank, k, i, r);
			out[k * n + i] = 0;
		}
	MPI_Alltoall(in, (int)n, MPI_UINT64_T, out, (int)n, MPI_UINT64_T, MPI_COMM_WORLD);
	for (k = 0; k < size; k++)
		for (i = 0; i < n; i++) {
			uint64_t want = a2a_value(k, rank, i, r);

			if (out[k * n + i] != want && bad++ < 3)
				fprintf(stderr, "rank %d: alltoall n=%zu round %d from %d element %zu: %llx, want %llx\n",
					rank, n, r, k, i, (unsigned long long)out[k * n + i],
					(unsigned long long)want);
		}
	free(in);
	free(out);
	return bad;
}

int main(int argc, char **argv)
{
	/* 8 bytes (eager) up to 1 MiB a block (rendezvous) */
	static const size_t counts[] = { 1, 500, 8192, 131072 };
	int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 3, r;
	long bad = 0, all_bad = 0;
	unsigned long long bytes = 0;
	size_t c;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (r = 0; r < rounds; r++)
		for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			bad += check_allreduce(rank, size, counts[c], r);
			bad += check_alltoall(rank, size, counts[c], r);
			bytes += counts[c] * 8 * (1 + size);
		}
	MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: %d ranks, %d rounds, %llu bytes a rank: %s (%ld wrong elements)\n",
		       size, rounds, bytes, all_bad ? "FAILED" : "every element verified", all_bad);
	MPI_Finalize();
	return all_bad ? 1 : 0;
}
