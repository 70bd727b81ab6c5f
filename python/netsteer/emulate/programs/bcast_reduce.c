/* The UnisonFlow source's Listing 1 as an unmodified MPI program: ITER
 * MPI_Bcast then ITER MPI_Reduce of NBYTES from root 0, a barrier between the
 * phases.  Usage: bcast_reduce [iterations] [bytes].  Rank 0 prints one line
 * per phase: "phase NAME seconds S" (wall time between barriers). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iter = argc > 1 ? atoi(argv[1]) : 10000;
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    char *buf = calloc(n, 1), *out = calloc(n, 1);
    memset(buf, rank & 0x7f, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iter; i++)
        MPI_Bcast(buf, n, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    for (int i = 0; i < iter; i++)
        MPI_Reduce(buf, out, n, MPI_CHAR, MPI_BOR, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    if (rank == 0) {
        printf("phase bcast seconds %.6f\nphase reduce seconds %.6f\n", t1 - t0, t2 - t1);
        fflush(stdout);
    }
    free(buf);
    free(out);
    MPI_Finalize();
    return 0;
}
