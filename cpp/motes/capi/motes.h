/* motes C API: write particle steps from C, C++ or Fortran (through iso_c_binding).
 *
 * Every function returns a motes_status; on failure motes_last_error() gives a
 * message naming the problem (per thread, valid until the next call on that
 * thread). No C++ exception crosses this boundary.
 *
 *   motes_writer* w;
 *   motes_writer_open("run.motes", &w);
 *   motes_writer_define_column(w, "electrons", "x", MOTES_F32, "m");   // optional schema, once
 *   motes_writer_begin_step(w, 0, 0.0);
 *   motes_writer_set_column(w, "electrons", "x", MOTES_F32, x, n, 0);   // stride 0: contiguous
 *   ...                                                                 // y, z, any attributes
 *   motes_writer_write_step(w);          // the step becomes visible atomically
 *   motes_writer_close(w);
 */
#ifndef MOTES_H
#define MOTES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The failures are the kinds of motes' error table (cpp/motes/core/errors.hpp, shown
 * in docs/guide.md#errors); the values are stable. */
typedef enum motes_status {
  MOTES_OK = 0,
  MOTES_ERROR_USAGE = 1,     /* bad arguments or data (names, lengths, NaN positions, ...) */
  MOTES_ERROR_FORMAT = 2,    /* an existing file or manifest is not valid motes data */
  MOTES_ERROR_IO = 3,        /* the operating system failed (create, write, sync, rename) */
  MOTES_ERROR_MEMORY = 4,    /* out of memory */
  MOTES_ERROR_INTERNAL = 5,  /* a bug: please report it with the message */
  MOTES_ERROR_NOT_FOUND = 6, /* a dataset or file does not exist */
  MOTES_ERROR_CANCELLED = 7, /* a query was stopped: cancelled by its caller, or past its deadline */
  MOTES_ERROR_REPLACED = 8   /* a dataset was deleted and written again since the handle read it */
} motes_status;

/* Column types; the values are those of the file format. */
typedef enum motes_dtype {
  MOTES_F32 = 1, MOTES_F64 = 2,
  MOTES_I8 = 3, MOTES_I16 = 4, MOTES_I32 = 5, MOTES_I64 = 6,
  MOTES_U8 = 7, MOTES_U16 = 8, MOTES_U32 = 9, MOTES_U64 = 10
} motes_dtype;

typedef struct motes_writer motes_writer;

/* The message of the last failure on this thread ("" after a success). */
const char* motes_last_error(void);

void motes_version(int* major, int* minor, int* patch);

/* Opens (creating when absent) the dataset directory `path` for appending steps. */
motes_status motes_writer_open(const char* path, motes_writer** writer);

/* Sets layout options for the following steps; 0 keeps a default. */
motes_status motes_writer_set_options(motes_writer* writer, uint32_t leaf_size, uint32_t lod_count, uint32_t threads,
                                      int sync);

/* Declares a column of a species once, for every following step (optional). A declared
 * column set later must have this dtype; one not set in a step is written empty, so a
 * process (or MPI rank) without particles of a species need not set its columns at all.
 * unit may be NULL. Declaring the same column again with another dtype is refused. */
motes_status motes_writer_define_column(motes_writer* writer, const char* species, const char* name,
                                        motes_dtype dtype, const char* unit);

/* Declares a derived quantity (format 2.4) of every species of the following steps: the
 * writer computes `expression`, a numeric expression over the species' columns (e.g.
 * "sqrt(ux*ux + uy*uy + uz*uz)"), for each particle and stores its statistics and a tail
 * index, not its values; a query naming it ("vmag > 3") or its expression is answered
 * through that index. Its syntax is checked now, its columns when a step is written (they
 * must be stored exactly). */
motes_status motes_writer_add_derived(motes_writer* writer, const char* name, const char* expression);

/* Starts a step: forgets the columns of the previous one. */
motes_status motes_writer_begin_step(motes_writer* writer, int64_t step, double time);

/* Attributes of the step being built, as a JSON object text (e.g. "{\"dt\": 0.1}"). */
motes_status motes_writer_set_step_attributes(motes_writer* writer, const char* json_object);

/* Hands over one column of one species. The data are read in place when the step is
 * written, so they must stay valid until motes_writer_write_step returns.
 * stride_bytes: distance between consecutive values; 0 means contiguous. */
motes_status motes_writer_set_column(motes_writer* writer, const char* species, const char* name, motes_dtype dtype,
                                     const void* data, uint64_t count, int64_t stride_bytes);

/* Free-text unit of a column already set (e.g. openPMD unitSI/unitDimension as JSON). */
motes_status motes_writer_set_unit(motes_writer* writer, const char* species, const char* name, const char* unit);

/* Hands over a grid field of the step: `ndim` (1 to 3) axes with dims[0..ndim) samples along
 * x, y, z; `components` arrays (1 for a scalar field, else its components, named by
 * component_names or "0", "1", ... when NULL), each of dims[0]*dims[1]*dims[2] values in C
 * order (x fastest, then y, then z; Fortran order of an array (nx, ny, nz)); a uniform grid
 * of origin[ndim] and spacing[ndim] (NULL: 0 and 1); cell_centred 0 (samples at the nodes)
 * or 1 (at the cell centres). unit may be NULL. The data are read when the step is written
 * and must stay valid until motes_writer_write_step returns. A parallel writer takes
 * fields on rank 0 only (whole grids). */
motes_status motes_writer_set_field(motes_writer* writer, const char* name, motes_dtype dtype, int ndim,
                                    const uint64_t* dims, int components, const void* const* data,
                                    const char* const* component_names, const double* origin,
                                    const double* spacing, int cell_centred, const char* unit);

/* Stores field `name` of the step (set before, whole or as this rank's block) lossily within
 * the absolute error `tolerance` (ZFP fixed accuracy, float32 and float64 only; a block ZFP
 * cannot keep within it, or holding NaN or an infinity, is stored exactly); 0 (the default)
 * stores it exactly. A parallel writer's ranks give the same tolerance for a field. */
motes_status motes_writer_set_field_tolerance(motes_writer* writer, const char* name, double tolerance);

/* Writes every species and field of the step, then publishes it in the manifest. */
motes_status motes_writer_write_step(motes_writer* writer);

/* Background writes: from now on motes_writer_write_step copies the step's
 * arrays (borrow = 0) or keeps their pointers (borrow = 1: the arrays must then not change
 * until the step is acknowledged), queues the step and returns; a thread of the writer
 * writes the queued steps in order (layout, indexes, compression, I/O), overlapping the
 * caller's next compute phase. At most max_pending (>= 1) steps are queued or being written:
 * write_step waits for room. A step is acknowledged once published in the manifest (durable
 * when the writer syncs): see motes_writer_last_written and motes_writer_flush; a crash loses
 * only unacknowledged steps, never a part of one. A failed step's error is returned by the
 * next write_step, flush or close (once); the steps after it are still written. A parallel
 * writer's ranks call it together, and MPI must provide MPI_THREAD_MULTIPLE (the collective
 * writes run on each rank's writer thread, on the writer's own communicator); MOTES_ERROR_USAGE
 * otherwise. */
motes_status motes_writer_set_background(motes_writer* writer, uint32_t max_pending, int borrow);

/* Waits until every step given is written (background writers; others write each step before
 * motes_writer_write_step returns); returns the first error not returned yet. */
motes_status motes_writer_flush(motes_writer* writer);

/* The last step acknowledged (written and published): *written = 1 and *step its index, or
 * *written = 0 when none has been yet. Either pointer may be NULL. */
motes_status motes_writer_last_written(motes_writer* writer, int64_t* step, int* written);

/* In-situ tracking: finds particles by id in step `step` of species `species` (NULL: the
 * step's only species) of the dataset at `path`, through the files' id index: for each of
 * the n ids (int64: the id, or a uint64 id's bits), out[i] is the particle's value of
 * `column` as a double and found[i] = 1, or out[i] = NaN and found[i] = 0 when the step
 * holds no such particle. `id_column` NULL: the files' indexed id column (or "id"). An id
 * held by two particles of the step is MOTES_ERROR_FORMAT naming it. */
motes_status motes_track(const char* path, int64_t step, const char* species, const char* id_column,
                         const int64_t* ids, uint64_t n, const char* column, double* out, uint8_t* found);

/* Releases the writer (an unwritten step is discarded; a background writer's queued steps
 * are written first, and the first error not returned yet is returned). Accepts NULL. */
motes_status motes_writer_close(motes_writer* writer);

#ifdef __cplusplus
}
#endif

#endif /* MOTES_H */
