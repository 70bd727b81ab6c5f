/* SMPI peer for netsteer: SMPI's pairwise alltoall (smpi/alltoall:pair, colls/alltoall/
 * alltoall-pair.cpp) written out as its MPI_Sendrecv loop, with the simulated end of
 * every step on every rank, and optionally a different size for every message.
 *
 * usage: smpi_pairwise BYTES [SIZES]
 *   BYTES  what each rank sends to each peer
 *   SIZES  optional file of p-1 lines of p integers: line i-1, column r is what rank r
 *          sends at step i (to rank r ^ i); it replaces BYTES message by message
 *
 * Prints one line per rank and step:  step RANK I PARTNER END_SECONDS
 *
 * Same messages and order as MPI_Alltoall with smpi/alltoall:pair, minus its step 0 (a
 * rank's copy to itself: Request::sendrecv copies the buffer and posts nothing). The
 * point of the SIZES file is to perturb the workload by a byte here and there (0.8 ns
 * at 10 Gb/s, the size of netsteer's clock tick) and see how much SimGrid's own answer
 * moves (docs/simgrid-validation.md, "Contended pairwise alltoall"). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 2) {
    if (rank == 0)
      fprintf(stderr, "usage: %s BYTES [SIZES]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long n    = atol(argv[1]);
  long* len = malloc(sizeof(long) * (size_t)p * (size_t)p); /* len[i * p + r] */
  long most = n;
  for (long k = 0; k < (long)p * p; k++)
    len[k] = n;
  if (argc > 2) {
    FILE* f = fopen(argv[2], "r");
    if (!f) {
      fprintf(stderr, "cannot open %s\n", argv[2]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 1; i < p; i++)
      for (int r = 0; r < p; r++)
        if (fscanf(f, "%ld", &len[(long)i * p + r]) != 1) {
          fprintf(stderr, "%s: expected %d lines of %d sizes\n", argv[2], p - 1, p);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
    fclose(f);
    for (long k = p; k < (long)p * p; k++)
      if (len[k] > most)
        most = len[k];
  }
  char* sbuf = SMPI_SHARED_MALLOC((size_t)most * p + 1);
  char* rbuf = SMPI_SHARED_MALLOC((size_t)most * p + 1);
  double* end = malloc(sizeof(double) * (size_t)p);
  for (int i = 1; i < p; i++) {
    int d = rank ^ i;
    /* the receive is posted for the largest message; the sender's size is what moves */
    MPI_Sendrecv(sbuf + (long)d * most, (int)len[(long)i * p + rank], MPI_BYTE, d, 7, rbuf + (long)d * most,
                 (int)most, MPI_BYTE, d, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    end[i] = MPI_Wtime();
  }
  for (int i = 1; i < p; i++)
    printf("step %d %d %d %.17g\n", rank, i, rank ^ i, end[i]);
  SMPI_SHARED_FREE(sbuf);
  SMPI_SHARED_FREE(rbuf);
  free(end);
  free(len);
  MPI_Finalize();
  return 0;
}
