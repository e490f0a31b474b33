/* motes C API, parallel part: the same writer, opened on a communicator. Every
 * rank of the communicator calls every function in the same order; write_step
 * is collective and returns the same status on every rank (a failure on one
 * rank is reported, with its rank, on all of them; no rank is left waiting).
 *
 *   motes_writer* w;
 *   motes_writer_open_parallel("run.motes", MPI_COMM_WORLD, &w);
 *   motes_writer_begin_step(w, step, time);
 *   motes_writer_set_column(w, "electrons", "x", MOTES_F32, x_local, n_local, 0);
 *   ...                                   (every rank: the same species and columns; n_local may be 0)
 *   motes_writer_write_step(w);           (aggregates, writes part files, publishes the step)
 *   motes_writer_close(w);
 */
#ifndef MOTES_MPI_H
#define MOTES_MPI_H

#include <mpi.h>

#include "motes.h" /* beside this file, here and as installed */

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the dataset directory `path` (rank 0 creates it when absent) for collective
 * writes over `comm` (any communicator: motes works on a duplicate of it). Collective;
 * fails on every rank when the directory cannot be a dataset.
 * motes_writer_close of a parallel writer is collective too (it frees the duplicate),
 * and must come before MPI_Finalize. */
motes_status motes_writer_open_parallel(const char* path, MPI_Comm comm, motes_writer** writer);

/* The same with a Fortran communicator handle (MPI_Comm_c2f / comm%MPI_VAL). */
motes_status motes_writer_open_parallel_f(const char* path, MPI_Fint comm, motes_writer** writer);

/* Aggregation of the following steps: target bytes per part file (0 = automatic),
 * method "adaptive" (default) or "aug" (the uniform-grid baseline), and whether
 * the adaptive tree tries all axes (best_axis != 0) or only the longest. */
motes_status motes_writer_set_aggregation(motes_writer* writer, uint64_t target_bytes, const char* method,
                                          int best_axis);

#ifdef __cplusplus
}
#endif

#endif /* MOTES_MPI_H */
