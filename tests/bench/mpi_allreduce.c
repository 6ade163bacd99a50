/* Open MPI's MPI_Allreduce (float sum) timed like the sidecar's probe: warm-up, a barrier, the
 * wall clock around `iters` calls, the slowest rank's mean; busbw = size / t x 2(n-1)/n.
 * Built and run by allreduce_compare.sh:  mpi_allreduce MIN MAX FACTOR WARMUP ITERS
 * Rank 0 prints "bytes busbw_GBps" per size. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 6) {
    fprintf(stderr, "usage: mpi_allreduce MIN MAX FACTOR WARMUP ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const size_t min_bytes = strtoull(argv[1], NULL, 10);
  const size_t max_bytes = strtoull(argv[2], NULL, 10);
  const size_t factor = strtoull(argv[3], NULL, 10);
  const int warmup = atoi(argv[4]);
  const int iters = atoi(argv[5]);
  int rank = 0;
  int n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const size_t count = bytes / sizeof(float);
    float* in = malloc(bytes);
    float* out = malloc(bytes);
    for (size_t i = 0; i < count; ++i) {
      in[i] = (float)(rank + 1);
    }
    for (int i = 0; i < warmup; ++i) {
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double mean = (MPI_Wtime() - start) / iters;
    double slowest = 0;
    MPI_Reduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (out[count - 1] != (float)(n * (n + 1) / 2)) {
      fprintf(stderr, "rank %d: wrong result\n", rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
      printf("%zu %.3f\n", bytes, (double)bytes / slowest / 1e9 * 2.0 * (n - 1) / n);
      fflush(stdout);
    }
    free(in);
    free(out);
  }
  MPI_Finalize();
  return 0;
}
