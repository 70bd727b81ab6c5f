/* SMPI peer for netsteer's streamed MPI benchmark: a program of collectives, one after
 * the other on every rank, as a netsteer MPI job runs it.
 *
 * usage: smpi_program OP BYTES ROOT [OP BYTES ROOT ...]
 *   OP     bcast reduce allreduce alltoall allgather gather scatter barrier
 *   BYTES  MPI count semantics, as in collbench.c (the buffer for bcast, reduce and
 *          allreduce; each rank's block for alltoall, allgather, gather and scatter)
 *   ROOT   the root of rooted operations (ignored by the others)
 * The algorithm of each OP is SMPI's --cfg=smpi/<op>:<name>, so an OP appears at most
 * once per program.
 *
 * Every rank prints "netsteer-rank R start=T0 end=T1" (simulated seconds around the
 * whole program) and rank 0 "netsteer-bench op=program bytes=0 ranks=P", the lines
 * netsteer.validation.simgrid.parse_output reads. Buffers are SMPI_SHARED_MALLOC'd:
 * only the timing matters. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 4 || (argc - 1) % 3) {
    if (rank == 0)
      fprintf(stderr, "usage: %s OP BYTES ROOT [OP BYTES ROOT ...]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t most = 1;
  for (int a = 1; a < argc; a += 3) {
    size_t n = (size_t)atol(argv[a + 1]);
    size_t need = n + 1;
    if (!strcmp(argv[a], "alltoall") || !strcmp(argv[a], "allgather") || !strcmp(argv[a], "gather") ||
        !strcmp(argv[a], "scatter"))
      need = n * (size_t)p + 1;
    if (need > most)
      most = need;
  }
  char* sbuf = SMPI_SHARED_MALLOC(most);
  char* rbuf = SMPI_SHARED_MALLOC(most);

  double t0 = MPI_Wtime();
  for (int a = 1; a < argc; a += 3) {
    const char* op = argv[a];
    int n          = atoi(argv[a + 1]);
    int root       = atoi(argv[a + 2]);
    if (!strcmp(op, "bcast"))
      MPI_Bcast(sbuf, n, MPI_BYTE, root, MPI_COMM_WORLD);
    else if (!strcmp(op, "reduce"))
      MPI_Reduce(sbuf, rbuf, n, MPI_INT8_T, MPI_SUM, root, MPI_COMM_WORLD);
    else if (!strcmp(op, "allreduce"))
      MPI_Allreduce(sbuf, rbuf, n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(op, "alltoall"))
      MPI_Alltoall(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(op, "allgather"))
      MPI_Allgather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(op, "gather"))
      MPI_Gather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, MPI_COMM_WORLD);
    else if (!strcmp(op, "scatter"))
      MPI_Scatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, root, MPI_COMM_WORLD);
    else if (!strcmp(op, "barrier"))
      MPI_Barrier(MPI_COMM_WORLD);
    else {
      if (rank == 0)
        fprintf(stderr, "unknown operation %s\n", op);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  double t1 = MPI_Wtime();
  printf("netsteer-rank %d start=%.17g end=%.17g\n", rank, t0, t1);
  if (rank == 0)
    printf("netsteer-bench op=program bytes=0 ranks=%d\n", p);
  SMPI_SHARED_FREE(sbuf);
  SMPI_SHARED_FREE(rbuf);
  MPI_Finalize();
  return 0;
}
