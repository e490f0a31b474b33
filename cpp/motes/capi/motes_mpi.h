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

/* Hands over this rank's block of a grid field of the step (as H5Block's views): the global
 * grid has `ndim` axes of global_dims[0..ndim) samples along x, y, z; this rank's block, its
 * interior without ghost zones, is samples [offset, offset + count) of it. Each of the
 * `components` arrays holds the block with its ghost zones, array_dims[0..ndim) samples per
 * axis in C order (x fastest; Fortran order of an array (nx, ny, nz)), the interior starting
 * at sample ghost_lo[0..ndim) of it (NULL: array_dims and ghost_lo may both be NULL when the
 * array is exactly the interior). Ghost zones are dropped on write: the file holds one global
 * grid. Every rank calls this for the same fields with the same name, dtype, global dims,
 * components, geometry (origin, spacing, cell_centred) and unit; a rank without a block
 * passes a count with a zero (and data may then hold NULLs). The blocks of all ranks must
 * cover the grid exactly once: write_step fails on every rank otherwise, naming the ranks.
 * The field is written by aggregators spread over the ranks, in part files of about the
 * aggregation's target size; no rank holds the whole grid. The data must stay valid until
 * motes_writer_write_step returns. Other arguments as motes_writer_set_field's. */
motes_status motes_writer_set_field_block(motes_writer* writer, const char* name, motes_dtype dtype, int ndim,
                                          const uint64_t* global_dims, const uint64_t* offset, const uint64_t* count,
                                          const uint64_t* array_dims, const uint64_t* ghost_lo, int components,
                                          const void* const* data, const char* const* component_names,
                                          const double* origin, const double* spacing, int cell_centred,
                                          const char* unit);

#ifdef __cplusplus
}
#endif

#endif /* MOTES_MPI_H */
