/* OSU-like point-to-point benchmarks between ranks 0 and 1 (the UnisonFlow
 * source's Figs. 11-13 used osu_bw and osu_latency 5.3; this follows their
 * method): for each size from 1 B to MAX_BYTES (powers of two),
 *   latency: ping-pong MPI_Send/MPI_Recv, SKIP warm-up rounds, then ITERS timed;
 *            one-way latency = time / (2 ITERS), in microseconds;
 *   bandwidth: WINDOW MPI_Isend then MPI_Waitall, a 4-byte reply, SKIP warm-up
 *            rounds then ITERS timed; MB/s = size * WINDOW * ITERS / time / 1e6.
 * Large messages (over 8 KiB) use ITERS/10 and SKIP/10 (at least 1), as OSU does.
 * Usage: osu_like [max_bytes] [lat_iters] [bw_iters] [window]
 * Rank 0 prints "lat SIZE US" and "bw SIZE MBS", one line each. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long max = argc > 1 ? atol(argv[1]) : 1 << 20;
    int lat_iters = argc > 2 ? atoi(argv[2]) : 1000, bw_iters = argc > 3 ? atoi(argv[3]) : 100;
    int window = argc > 4 ? atoi(argv[4]) : 64;
    if (size < 2) {
        fprintf(stderr, "osu_like needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = malloc(max), *rbuf = malloc((size_t)max * window);
    memset(buf, 'a', max);
    MPI_Request *req = malloc(sizeof(MPI_Request) * window);
    for (long n = 1; n <= max; n *= 2) {
        int big = n > 8192;
        int it = big ? (lat_iters / 10 ? lat_iters / 10 : 1) : lat_iters, skip = it / 10 ? it / 10 : 1;
        double t0 = 0;
        if (rank <= 1) {
            for (int i = 0; i < it + skip; i++) {
                if (i == skip)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
                }
            }
            if (rank == 0)
                printf("lat %ld %.3f\n", n, (MPI_Wtime() - t0) * 1e6 / (2.0 * it));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        it = big ? (bw_iters / 10 ? bw_iters / 10 : 1) : bw_iters;
        skip = it / 10 ? it / 10 : 1;
        if (rank <= 1) {
            for (int i = 0; i < it + skip; i++) {
                if (i == skip)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    for (int w = 0; w < window; w++)
                        MPI_Isend(buf, n, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                    MPI_Recv(rbuf, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    for (int w = 0; w < window; w++)
                        MPI_Irecv(rbuf + (size_t)w * n, n, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                    MPI_Send(buf, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
                }
            }
            if (rank == 0)
                printf("bw %ld %.3f\n", n, (double)n * window * it / (MPI_Wtime() - t0) / 1e6);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fflush(stdout);
    free(buf);
    free(rbuf);
    free(req);
    MPI_Finalize();
    return 0;
}
