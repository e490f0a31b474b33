/* The parallel C API under MPI (run with 3 or more ranks): local columns of
 * rank-dependent lengths (one rank empty), a schema mismatch and a NaN position on
 * one rank reported on every rank, aggregation settings, and a writer opened on a
 * sub-communicator. Every rank checks its own statuses; the job fails when any did. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "motes/capi/motes_mpi.h"

static int rank = 0, size = 1, failures = 0;
#define CHECK(cond, what)                                                                                \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      fprintf(stderr, "rank %d: FAILED %s (line %d): %s\n", rank, what, __LINE__, motes_last_error()); \
      ++failures;                                                                                        \
    }                                                                                                    \
  } while (0)

struct particle {
  double x, y, z;
  float energy;
};

/* This rank's particles: a slab of the unit cube along x; rank 1 holds none. */
static uint64_t make_particles(int r, int nranks, int step, struct particle** p, uint64_t** id) {
  uint64_t n = r == 1 ? 0 : (uint64_t)(500 * (r + 1) + 100 * step);
  *p = malloc(sizeof(struct particle) * (n ? n : 1));
  *id = malloc(sizeof(uint64_t) * (n ? n : 1));
  for (uint64_t i = 0; i < n; ++i) {
    (*p)[i].x = (r + (double)(i % 101) / 101.0) / nranks;
    (*p)[i].y = (double)(i % 89) / 89.0;
    (*p)[i].z = 0.5 + 0.4 * sin(0.01 * (double)i);
    (*p)[i].energy = (float)(i % 13);
    (*id)[i] = ((uint64_t)r << 32) | i;
  }
  return n;
}

/* Sets x, y, z (strided, from the array of structs), energy and id. */
static void set_columns(motes_writer* w, const struct particle* p, const uint64_t* id, uint64_t n, motes_dtype energy) {
  CHECK(motes_writer_set_column(w, "e", "x", MOTES_F64, &p->x, n, sizeof *p) == MOTES_OK, "x");
  CHECK(motes_writer_set_column(w, "e", "y", MOTES_F64, &p->y, n, sizeof *p) == MOTES_OK, "y");
  CHECK(motes_writer_set_column(w, "e", "z", MOTES_F64, &p->z, n, sizeof *p) == MOTES_OK, "z");
  CHECK(motes_writer_set_column(w, "e", "energy", energy, &p->energy, n, sizeof *p) == MOTES_OK, "energy");
  CHECK(motes_writer_set_column(w, "e", "id", MOTES_U64, id, n, 0) == MOTES_OK, "id");
}

/* The status of a collective call must be the same on every rank. */
static void check_same_everywhere(motes_status s, MPI_Comm comm, const char* what) {
  int mine = (int)s, lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, comm);
  CHECK(lo == hi, what);
}

static int files_equal(const char* a, const char* b) {
  FILE* fa = fopen(a, "rb");
  FILE* fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

static int file_exists(const char* p) {
  FILE* f = fopen(p, "rb");
  if (f) fclose(f);
  return f != NULL;
}

/* Fields from every rank's block: a 100 x 40 x 20 grid (x, y, z) cut into slabs along x, each
 * rank's array holding its slab with one ghost layer on each side inside the grid; rank 1
 * holds no block. One part (a large target) is the serial writer's file byte for byte; a
 * small target gives one part per rank holding a block or fewer; overlapping blocks are
 * refused on every rank. */
static void check_field_blocks(const char* base) {
  enum { NX = 100, NY = 40, NZ = 20 };
  const uint64_t dims[3] = {NX, NY, NZ};
  const double origin[3] = {0, 0, 0}, spacing[3] = {0.5, 0.5, 0.5};
  int holders = size - 1, slot = rank == 0 ? 0 : rank - 1; /* ranks other than 1, in order */
  uint64_t lo = rank == 1 ? 0 : (uint64_t)slot * NX / holders, hi = rank == 1 ? 0 : (uint64_t)(slot + 1) * NX / holders;
  uint64_t glo = lo > 0 ? 1 : 0, ghi = hi < NX && hi > 0 ? 1 : 0;
  uint64_t ax = hi - lo + glo + ghi;
  float* a = malloc(sizeof(float) * (ax ? ax : 1) * NY * NZ);
  for (uint64_t k = 0; k < NZ; ++k)
    for (uint64_t j = 0; j < NY; ++j)
      for (uint64_t i = 0; i < ax; ++i) a[(k * NY + j) * ax + i] = (float)((lo + i - glo) + 100 * j + 10000 * k);
  const uint64_t offset[3] = {lo, 0, 0}, count[3] = {hi - lo, NY, NZ}, array_dims[3] = {ax, NY, NZ},
                 ghost_lo[3] = {glo, 0, 0};
  const void* data[1] = {rank == 1 ? NULL : a};
  char path[320], serial[320], f1[400], f2[400];
  snprintf(path, sizeof path, "%s-fields", base);
  snprintf(serial, sizeof serial, "%s-serial", base);

  motes_writer* w = NULL;
  CHECK(motes_writer_open_parallel(path, MPI_COMM_WORLD, &w) == MOTES_OK, "open for fields");
  for (int step = 0; step < 2; ++step) {
    CHECK(motes_writer_set_aggregation(w, step == 0 ? (uint64_t)1 << 30 : 4096, "adaptive", 0) == MOTES_OK, "target");
    CHECK(motes_writer_begin_step(w, step, 0.0) == MOTES_OK, "begin a fields step");
    CHECK(motes_writer_set_field_block(w, "rho", MOTES_F32, 3, dims, offset, count, array_dims, ghost_lo, 1, data, NULL,
                                       origin, spacing, 0, "C/m^3") == MOTES_OK,
          "set_field_block");
    motes_status s = motes_writer_write_step(w);
    CHECK(s == MOTES_OK, "write a step of fields from blocks");
    check_same_everywhere(s, MPI_COMM_WORLD, "field step status agrees");
  }
  /* Overlap: every rank claims the whole x range. */
  CHECK(motes_writer_begin_step(w, 2, 0.0) == MOTES_OK, "begin step 2 of fields");
  const uint64_t all[3] = {0, 0, 0}, whole[3] = {NX, NY, NZ};
  float* b = malloc(sizeof(float) * NX * NY * NZ);
  memset(b, 0, sizeof(float) * NX * NY * NZ);
  const void* bd[1] = {b};
  CHECK(motes_writer_set_field_block(w, "rho", MOTES_F32, 3, dims, all, whole, NULL, NULL, 1, bd, NULL, origin, spacing, 0,
                                     "C/m^3") == MOTES_OK,
        "set an overlapping block");
  motes_status s = motes_writer_write_step(w);
  CHECK(s == MOTES_ERROR_USAGE, "overlapping blocks refused");
  CHECK(strstr(motes_last_error(), "overlap") != NULL, "the message says overlap");
  check_same_everywhere(s, MPI_COMM_WORLD, "overlap status agrees");
  CHECK(motes_writer_close(w) == MOTES_OK, "close the fields writer");

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    /* The serial writer's file of the same grid. */
    float* g = malloc(sizeof(float) * NX * NY * NZ);
    for (uint64_t k = 0; k < NZ; ++k)
      for (uint64_t j = 0; j < NY; ++j)
        for (uint64_t i = 0; i < NX; ++i) g[(k * NY + j) * NX + i] = (float)(i + 100 * j + 10000 * k);
    motes_writer* ws = NULL;
    const void* gd[1] = {g};
    CHECK(motes_writer_open(serial, &ws) == MOTES_OK, "open serial");
    CHECK(motes_writer_begin_step(ws, 0, 0.0) == MOTES_OK, "begin serial");
    CHECK(motes_writer_set_field(ws, "rho", MOTES_F32, 3, dims, 1, gd, NULL, origin, spacing, 0, "C/m^3") == MOTES_OK,
          "serial field");
    CHECK(motes_writer_write_step(ws) == MOTES_OK, "write serial");
    CHECK(motes_writer_close(ws) == MOTES_OK, "close serial");
    snprintf(f1, sizeof f1, "%s/steps/000000/rho.mfd", path);
    snprintf(f2, sizeof f2, "%s/steps/000000/rho.mfd", serial);
    CHECK(files_equal(f1, f2), "one part is the serial file byte for byte");
    /* Step 1: 4 kB parts of the 320 kB grid (16 blocks), one per rank: every rank aggregates one. */
    for (int k = 0; k < size; ++k) {
      snprintf(f1, sizeof f1, "%s/steps/000001/rho.p%06d.mfd", path, k);
      CHECK(file_exists(f1), "a part file per rank");
    }
    snprintf(f1, sizeof f1, "%s/steps/000001/rho.p%06d.mfd", path, size);
    CHECK(!file_exists(f1), "no more parts than ranks");
    char cleanup[700];
    snprintf(cleanup, sizeof cleanup, "rm -rf '%s' '%s'", path, serial);
    CHECK(system(cleanup) == 0, "clean up");
    free(g);
  }
  free(a);
  free(b);
}

/* Background collective writes: write_step copies and returns on every rank; the arrays
 * change at once; flush waits; the energies read back are those given. */
static void check_background(const char* path, int provided) {
  motes_writer* w = NULL;
  CHECK(provided >= MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided (Open MPI gives it)");
  if (provided >= MPI_THREAD_MULTIPLE) {
    char bpath[300];
    snprintf(bpath, sizeof bpath, "%s.background", path);
    CHECK(motes_writer_open_parallel(bpath, MPI_COMM_WORLD, &w) == MOTES_OK, "open a background parallel writer");
    CHECK(motes_writer_set_background(w, 2, 0) == MOTES_OK, "background");
    for (int step = 0; step < 3; ++step) {
      struct particle* p;
      uint64_t* id;
      uint64_t n = make_particles(rank, size, 0, &p, &id);
      for (uint64_t i = 0; i < n; ++i) p[i].energy = (float)(100 * step + (int)(i % 13));
      CHECK(motes_writer_begin_step(w, step, step) == MOTES_OK, "begin a background step");
      set_columns(w, p, id, n, MOTES_F32);
      CHECK(motes_writer_write_step(w) == MOTES_OK, "queue a background step");
      for (uint64_t i = 0; i < n; ++i) p[i].energy = -1.0f; /* the simulation goes on */
      free(p);
      free(id);
    }
    CHECK(motes_writer_flush(w) == MOTES_OK, "flush the background steps");
    int64_t last = -1;
    int written = 0;
    CHECK(motes_writer_last_written(w, &last, &written) == MOTES_OK && written && last == 2, "last written step");
    CHECK(motes_writer_close(w) == MOTES_OK, "close the background writer");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      for (int step = 0; step < 3; ++step) {
        int64_t ids[2] = {(int64_t)(((uint64_t)2 << 32) | 5), 7};
        double got[2];
        uint8_t found[2];
        CHECK(motes_track(bpath, step, "e", NULL, ids, 2, "energy", got, found) == MOTES_OK, "track");
        for (int k = 0; k < 2; ++k)
          CHECK(!found[k] || got[k] == 100.0 * step + (double)((ids[k] & 0xffffffff) % 13), "the energies given");
        CHECK(found[0] || found[1], "a particle found");
      }
      char cleanup[400];
      snprintf(cleanup, sizeof cleanup, "rm -rf '%s'", bpath);
      CHECK(system(cleanup) == 0, "remove the background dataset");
    }
  }
}

int main(int argc, char** argv) {
  int provided = 0;  /* background writes run MPI on a thread of the writer's */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 3) {
    if (rank == 0) fprintf(stderr, "run with at least 3 ranks\n");
    MPI_Finalize();
    return 2;
  }
  /* One path for all ranks: rank 0's pid. */
  char path[256];
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/motes-capi-mpi-%d.motes", argc > 1 ? argv[1] : "/tmp", pid);

  motes_writer* w = NULL;
  CHECK(motes_writer_open_parallel(path, MPI_COMM_WORLD, &w) == MOTES_OK, "open_parallel");
  CHECK(motes_writer_set_aggregation(w, 0, "bogus", 1) == MOTES_ERROR_USAGE, "bad aggregation method refused");
  CHECK(strstr(motes_last_error(), "bogus") != NULL, "message names the method");
  CHECK(motes_writer_set_aggregation(w, 0, NULL, 1) == MOTES_ERROR_USAGE, "NULL method refused");
  CHECK(motes_writer_set_aggregation(w, 64 * 1024, "adaptive", 1) == MOTES_OK, "adaptive aggregation");

  /* Steps 0 and 1: local columns of different lengths, rank 1 empty; step 1 with AUG. */
  for (int step = 0; step < 2; ++step) {
    struct particle* p;
    uint64_t* id;
    uint64_t n = make_particles(rank, size, step, &p, &id);
    if (step == 1) CHECK(motes_writer_set_aggregation(w, 0, "aug", 0) == MOTES_OK, "aug aggregation");
    CHECK(motes_writer_begin_step(w, step, 0.5 * step) == MOTES_OK, "begin step");
    CHECK(motes_writer_set_step_attributes(w, "{\"dt\": 0.5}") == MOTES_OK, "attributes");
    set_columns(w, p, id, n, MOTES_F32);
    motes_status s = motes_writer_write_step(w);
    CHECK(s == MOTES_OK, step == 0 ? "write step 0" : "write step 1");
    check_same_everywhere(s, MPI_COMM_WORLD, "write status agrees");
    free(p);
    free(id);
  }

  /* Step 2: the last rank gives energy another dtype: every rank is told, naming it. */
  {
    struct particle* p;
    uint64_t* id;
    uint64_t n = make_particles(rank, size, 2, &p, &id);
    double* energy64 = malloc(sizeof(double) * (n ? n : 1));
    for (uint64_t i = 0; i < n; ++i) energy64[i] = p[i].energy;
    CHECK(motes_writer_begin_step(w, 2, 1.0) == MOTES_OK, "begin step 2");
    if (rank == size - 1) {
      CHECK(motes_writer_set_column(w, "e", "x", MOTES_F64, &p->x, n, sizeof *p) == MOTES_OK, "x");
      CHECK(motes_writer_set_column(w, "e", "y", MOTES_F64, &p->y, n, sizeof *p) == MOTES_OK, "y");
      CHECK(motes_writer_set_column(w, "e", "z", MOTES_F64, &p->z, n, sizeof *p) == MOTES_OK, "z");
      CHECK(motes_writer_set_column(w, "e", "energy", MOTES_F64, energy64, n, 0) == MOTES_OK, "energy f64");
      CHECK(motes_writer_set_column(w, "e", "id", MOTES_U64, id, n, 0) == MOTES_OK, "id");
    } else {
      set_columns(w, p, id, n, MOTES_F32);
    }
    motes_status s = motes_writer_write_step(w);
    CHECK(s == MOTES_ERROR_USAGE, "dtype mismatch refused on every rank");
    char expected[64];
    snprintf(expected, sizeof expected, "rank %d", size - 1);
    CHECK(strstr(motes_last_error(), expected) != NULL, "message names the rank");
    CHECK(strstr(motes_last_error(), "energy") != NULL, "message names the column");
    check_same_everywhere(s, MPI_COMM_WORLD, "mismatch status agrees");

    /* The same step again with a NaN position on rank 0 only (a local check). */
    CHECK(motes_writer_begin_step(w, 2, 1.0) == MOTES_OK, "begin step 2 again");
    if (rank == 0) p[3].y = NAN;
    set_columns(w, p, id, n, MOTES_F32);
    s = motes_writer_write_step(w);
    CHECK(s == MOTES_ERROR_USAGE, "NaN on one rank refused on every rank");
    CHECK(strstr(motes_last_error(), "rank 0") != NULL, "NaN message names the rank");
    check_same_everywhere(s, MPI_COMM_WORLD, "NaN status agrees");

    /* And once more, correct: the failures left no trace of step 2. */
    if (rank == 0) p[3].y = 0.25;
    CHECK(motes_writer_begin_step(w, 2, 1.0) == MOTES_OK, "begin step 2 once more");
    set_columns(w, p, id, n, MOTES_F32);
    CHECK(motes_writer_write_step(w) == MOTES_OK, "write step 2 after the failures");

    /* Step 4 with a declared schema: a rank without particles sets no column at all. */
    CHECK(motes_writer_define_column(w, "e", "x", MOTES_F64, "m") == MOTES_OK, "define x");
    CHECK(motes_writer_define_column(w, "e", "y", MOTES_F64, "m") == MOTES_OK, "define y");
    CHECK(motes_writer_define_column(w, "e", "z", MOTES_F64, "m") == MOTES_OK, "define z");
    CHECK(motes_writer_define_column(w, "e", "energy", MOTES_F32, NULL) == MOTES_OK, "define energy");
    CHECK(motes_writer_define_column(w, "e", "id", MOTES_U64, NULL) == MOTES_OK, "define id");
    CHECK(motes_writer_begin_step(w, 4, 2.0) == MOTES_OK, "begin step 4");
    if (n) set_columns(w, p, id, n, MOTES_F32);
    s = motes_writer_write_step(w);
    CHECK(s == MOTES_OK, "write step 4, empty ranks setting nothing");
    check_same_everywhere(s, MPI_COMM_WORLD, "step 4 status agrees");
    free(energy64);
    free(p);
    free(id);
  }
  CHECK(motes_writer_close(w) == MOTES_OK, "close");

  /* Step 3 from a sub-communicator: the even ranks write it; the others have none. */
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2 == 0 ? 0 : MPI_UNDEFINED, rank, &sub);
  if (sub != MPI_COMM_NULL) {
    int sub_rank = 0, sub_size = 1;
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Comm_size(sub, &sub_size);
    motes_writer* ws = NULL;
    CHECK(motes_writer_open_parallel(path, sub, &ws) == MOTES_OK, "open_parallel on a sub-communicator");
    MPI_Comm_free(&sub); /* motes keeps its own duplicate */
    struct particle* p;
    uint64_t* id;
    uint64_t n = make_particles(sub_rank, sub_size, 3, &p, &id);
    CHECK(motes_writer_begin_step(ws, 3, 1.5) == MOTES_OK, "begin step 3");
    set_columns(ws, p, id, n, MOTES_F32);
    motes_status s = motes_writer_write_step(ws);
    CHECK(s == MOTES_OK, "write step 3 on the sub-communicator");
    CHECK(motes_writer_close(ws) == MOTES_OK, "close the sub-communicator's writer");
    free(p);
    free(id);
  } else {
    motes_writer* ws = (motes_writer*)&ws; /* must be reset to NULL on failure */
    CHECK(motes_writer_open_parallel(path, sub, &ws) == MOTES_ERROR_USAGE, "MPI_COMM_NULL refused");
    CHECK(ws == NULL, "writer is NULL after a failed open");
  }
  CHECK(motes_writer_open_parallel(NULL, MPI_COMM_WORLD, &w) == MOTES_ERROR_USAGE, "NULL path refused");
  check_field_blocks(path);

  /* The manifest lists steps 0..3 with the global counts (it is JSON, written with
   * one-space indentation; docs/format.md). */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char manifest[320];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    FILE* f = fopen(manifest, "rb");
    CHECK(f != NULL, "manifest exists");
    static char text[1 << 16];
    size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[len] = '\0';
    if (f) fclose(f);
    int even_ranks = (size + 1) / 2;
    for (int step = 0; step < 4; ++step) {
      uint64_t expected = 0;
      int writers = step == 3 ? even_ranks : size;
      for (int r = 0; r < writers; ++r) expected += r == 1 ? 0 : (uint64_t)(500 * (r + 1) + 100 * step);
      char want[64];
      snprintf(want, sizeof want, "\"index\": %d", step);
      CHECK(strstr(text, want) != NULL, "manifest lists the step");
      snprintf(want, sizeof want, "\"count\": %llu", (unsigned long long)expected);
      CHECK(strstr(text, want) != NULL, "manifest holds the global count");
    }
    /* Step 4 holds step 2's particles, and the declared unit. */
    uint64_t expected4 = 0;
    for (int r = 0; r < size; ++r) expected4 += r == 1 ? 0 : (uint64_t)(500 * (r + 1) + 100 * 2);
    char want4[64];
    snprintf(want4, sizeof want4, "\"count\": %llu", (unsigned long long)expected4);
    CHECK(strstr(text, "\"index\": 4") != NULL, "manifest lists step 4");
    CHECK(strstr(text, want4) != NULL, "step 4 holds the global count");
    CHECK(strstr(text, "\"unit\": \"m\"") != NULL, "the declared unit is stored");
  }

  check_background(path, provided);

  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total == 0) printf("parallel C API: all checks passed on %d ranks (%s)\n", size, path);
    char cleanup[300];
    snprintf(cleanup, sizeof cleanup, "rm -rf '%s'", path);
    if (total == 0 && system(cleanup) != 0) total = 1;
  }
  MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return total ? 1 : 0;
}
