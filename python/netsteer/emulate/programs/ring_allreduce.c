/* Ring all-reduce as data-parallel training runs it (Baidu/Horovod; SMPI's
 * "lr"), an unmodified MPI program: NBYTES of float32 split in p chunks,
 * p-1 reduce-scatter steps then p-1 allgather steps, each sending one chunk
 * to rank+1 while receiving one from rank-1.  The ring is the
 * rank order, so where the ranks are placed decides which links it crosses.
 *
 * Usage: ring_allreduce [iterations] [bytes] [poll_us].  With poll_us > 0 a
 * rank waits for a step by testing every poll_us microseconds and sleeping in
 * between, instead of MPICH's busy wait: many ranks on few cores then leave
 * the CPU to the ranks that have data and to the switches (the default, 0,
 * waits as MPICH does).  One untimed warm-up (it opens
 * the connections), then per iteration rank 0 prints
 * "allreduce K seconds S at T" (S: the slowest rank, between barriers; T: the
 * wall clock, Unix seconds, when rank 0 had the slowest time) and at the end
 * "check ok" when every element of every rank's result is the exact sum, or
 * "check FAILED N" (N wrong elements) and exit status 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int poll_us;

/* one ring step: send a chunk right while receiving one from the left */
static void step(float *out, float *in, int c, int right, int left, int tag)
{
    if (poll_us <= 0) {
        MPI_Sendrecv(out, c, MPI_FLOAT, right, tag, in, c, MPI_FLOAT, left, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Irecv(in, c, MPI_FLOAT, left, tag, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(out, c, MPI_FLOAT, right, tag, MPI_COMM_WORLD, &rq[1]);
    struct timespec nap = {0, poll_us * 1000L};
    for (int done = 0;;) {
        MPI_Testall(2, rq, &done, st);
        if (done)
            break;
        nanosleep(&nap, NULL);
    }
}

static void ring(float *buf, float *tmp, int n, int rank, int p)
{
    int c = n / p, right = (rank + 1) % p, left = (rank + p - 1) % p;
    for (int s = 0; s < p - 1; s++) {  /* reduce-scatter: chunk (rank - s) goes right */
        int out = (rank - s + p) % p, in = (rank - s - 1 + 2 * p) % p;
        step(buf + out * c, tmp, c, right, left, s);
        for (int i = 0; i < c; i++)
            buf[in * c + i] += tmp[i];
    }
    for (int s = 0; s < p - 1; s++) {  /* allgather: the reduced chunk (rank + 1 - s) goes right */
        int out = (rank + 1 - s + p) % p, in = (rank - s + p) % p;
        step(buf + out * c, buf + in * c, c, right, left, p + s);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int iter = argc > 1 ? atoi(argv[1]) : 5;
    long nbytes = argc > 2 ? atol(argv[2]) : 1 << 20;
    poll_us = argc > 3 ? atoi(argv[3]) : 0;
    int n = (int)(nbytes / 4) / p * p;  /* whole chunks */
    if (n < p) {
        if (rank == 0)
            fprintf(stderr, "ring_allreduce: %ld bytes is less than one float per rank\n", nbytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *init = malloc(n * sizeof *init), *buf = malloc(n * sizeof *buf), *tmp = malloc(n / p * sizeof *tmp);
    for (int i = 0; i < n; i++)
        init[i] = (float)((rank + i) % 8);  /* small integers: every sum is exact in float */
    long wrong = 0;
    for (int k = -1; k < iter; k++) {
        memcpy(buf, init, n * sizeof *buf);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        ring(buf, tmp, n, rank, p);
        double dt = MPI_Wtime() - t0, slowest;
        MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            long want = 0;
            for (int r = 0; r < p; r++)
                want += (r + i) % 8;
            wrong += buf[i] != (float)want;
        }
        if (rank == 0 && k >= 0) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            printf("allreduce %d seconds %.6f at %.6f\n", k, slowest, now.tv_sec + now.tv_nsec * 1e-9);
            fflush(stdout);
        }
    }
    long all = 0;
    MPI_Reduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("check FAILED %ld\n", all);
        else
            printf("check ok\n");
        fflush(stdout);
    }
    free(init);
    free(buf);
    free(tmp);
    MPI_Finalize();
    return rank == 0 && all ? 1 : 0;
}
