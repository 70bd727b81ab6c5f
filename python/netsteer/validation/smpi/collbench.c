/* netsteer's SMPI benchmark: time one MPI operation, print the simulated time.
 *
 * usage: collbench OP BYTES [ROOT]
 *   OP     bcast reduce allreduce alltoall allgather gather scatter barrier send
 *   BYTES  MPI count semantics, as in netsteer: the buffer for bcast/reduce/allreduce,
 *          the block each rank sends to each peer for alltoall/allgather/gather/scatter;
 *          for send, rank 0 sends BYTES to rank ROOT (default 1).
 *
 * Every rank starts the operation at the same simulated time (MPI_Init costs nothing
 * under netsteer's SMPI settings), so no barrier precedes it: a barrier would release
 * ranks at different times and blur the comparison. Rank 0 prints one line:
 *   netsteer-bench op=allreduce bytes=1048576 ranks=64 start=0 end=1.2e-3
 * with the earliest start and the latest end over all ranks, in seconds.
 *
 * Buffers come from SMPI_SHARED_MALLOC: every rank shares one copy, so 256 ranks with
 * 16 MiB buffers fit in memory. The data is garbage; only the timing matters. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SMPI_SHARED_MALLOC
#define ALLOC(n) SMPI_SHARED_MALLOC(n)
#define RELEASE(p) SMPI_SHARED_FREE(p)
#else
#define ALLOC(n) malloc(n)
#define RELEASE(p) free(p)
#endif

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 3) {
    if (rank == 0)
      fprintf(stderr, "usage: %s OP BYTES [ROOT]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* op = argv[1];
  long n         = atol(argv[2]);
  int root       = argc > 3 ? atoi(argv[3]) : 0;
  /* only what the operation needs: shared malloc maps buffers block by block, and too
   * many mappings hit the kernel's vm.max_map_count */
  size_t one = (size_t)n + 1, all = (size_t)n * (size_t)p + 1;
  size_t ssize = one, rsize = one;
  if (!strcmp(op, "alltoall"))
    ssize = rsize = all;
  else if (!strcmp(op, "allgather") || (!strcmp(op, "gather") && rank == root))
    rsize = all;
  else if (!strcmp(op, "scatter") && rank == root)
    ssize = all;
  char* sbuf = ALLOC(ssize);
  char* rbuf = ALLOC(rsize);

  double t0 = MPI_Wtime();
  if (!strcmp(op, "bcast"))
    MPI_Bcast(sbuf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
  else if (!strcmp(op, "reduce")) /* int8 elements: a size in bytes is a count */
    MPI_Reduce(sbuf, rbuf, (int)n, MPI_INT8_T, MPI_SUM, root, MPI_COMM_WORLD);
  else if (!strcmp(op, "allreduce"))
    MPI_Allreduce(sbuf, rbuf, (int)n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
  else if (!strcmp(op, "alltoall"))
    MPI_Alltoall(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  else if (!strcmp(op, "allgather"))
    MPI_Allgather(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  else if (!strcmp(op, "gather"))
    MPI_Gather(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
  else if (!strcmp(op, "scatter"))
    MPI_Scatter(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
  else if (!strcmp(op, "barrier"))
    MPI_Barrier(MPI_COMM_WORLD);
  else if (!strcmp(op, "send")) {
    int dst = argc > 3 ? root : 1;
    if (rank == 0)
      MPI_Send(sbuf, (int)n, MPI_BYTE, dst, 0, MPI_COMM_WORLD);
    else if (rank == dst)
      MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    if (rank == 0)
      fprintf(stderr, "unknown operation %s\n", op);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double t1 = MPI_Wtime();

  /* every rank prints its own times; the caller takes the earliest start and the
     latest end. No closing MPI_Reduce: its messages would share cables with the
     collective's last flows on ranks that finish early. */
  printf("netsteer-rank %d start=%.17g end=%.17g\n", rank, t0, t1);
  if (rank == 0)
    printf("netsteer-bench op=%s bytes=%ld ranks=%d\n", op, n, p);
  RELEASE(sbuf);
  RELEASE(rbuf);
  MPI_Finalize();
  return 0;
}
