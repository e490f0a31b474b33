/* The C API from C: write two steps with strided and contiguous columns, check errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "motes/capi/motes.h"

static int failures = 0;
#define CHECK(cond, what)                                                        \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "FAILED %s (line %d): %s\n", what, __LINE__, motes_last_error()); \
      ++failures;                                                                \
    }                                                                            \
  } while (0)

struct particle {
  double x, y, z;
  float energy;
};

int main(void) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/motes-capi-%d.motes", (int)getpid());
  enum { N = 5000 };
  struct particle* p = malloc(sizeof(struct particle) * N);
  unsigned long long* id = malloc(sizeof(unsigned long long) * N);
  for (int i = 0; i < N; ++i) {
    p[i].x = (i % 97) / 97.0;
    p[i].y = (i % 89) / 89.0;
    p[i].z = sin(i * 0.01);
    p[i].energy = (float)(i % 13);
    id[i] = (unsigned long long)i;
  }
  motes_writer* w = NULL;
  CHECK(motes_writer_open(path, &w) == MOTES_OK, "open");
  CHECK(motes_writer_set_options(w, 64, 4, 0, 0) == MOTES_OK, "options");
  CHECK(motes_writer_set_options(w, 3, 0, 0, 0) == MOTES_ERROR_USAGE, "bad leaf size refused");
  CHECK(strstr(motes_last_error(), "leaf_size") != NULL, "message names leaf_size");
  /* A derived quantity: computed and indexed by the writer (format 2.4), its values not stored. */
  CHECK(motes_writer_add_derived(w, "r2", "x*x + y*y") == MOTES_OK, "derived quantity");
  CHECK(motes_writer_add_derived(w, "r2", "x") == MOTES_ERROR_USAGE, "a derived name declared twice refused");
  CHECK(motes_writer_add_derived(w, "bad", "x +") == MOTES_ERROR_USAGE, "bad syntax refused at once");
  CHECK(strstr(motes_last_error(), "position") != NULL, "message names the position");

  CHECK(motes_writer_set_column(w, "e", "x", MOTES_F64, &p[0].x, N, 0) == MOTES_ERROR_USAGE, "column before a step");
  CHECK(motes_writer_begin_step(w, 0, 0.5) == MOTES_OK, "begin step 0");
  CHECK(motes_writer_set_step_attributes(w, "{\"dt\": 0.1}") == MOTES_OK, "attributes");
  CHECK(motes_writer_set_step_attributes(w, "[1, 2]") == MOTES_ERROR_USAGE, "non-object attributes refused");
  CHECK(motes_writer_set_column(w, "electrons", "x", MOTES_F64, &p[0].x, N, sizeof(struct particle)) == MOTES_OK, "x");
  CHECK(motes_writer_set_column(w, "electrons", "y", MOTES_F64, &p[0].y, N, sizeof(struct particle)) == MOTES_OK, "y");
  CHECK(motes_writer_set_column(w, "electrons", "z", MOTES_F64, &p[0].z, N, sizeof(struct particle)) == MOTES_OK, "z");
  CHECK(motes_writer_set_column(w, "electrons", "energy", MOTES_F32, &p[0].energy, N, sizeof(struct particle)) == MOTES_OK,
        "energy");
  CHECK(motes_writer_set_column(w, "electrons", "id", MOTES_U64, id, N, 0) == MOTES_OK, "id");
  CHECK(motes_writer_set_unit(w, "electrons", "x", "m") == MOTES_OK, "unit");
  CHECK(motes_writer_set_column(w, "electrons", "id", MOTES_U64, id, N, 0) == MOTES_ERROR_USAGE, "duplicate refused");
  CHECK(motes_writer_write_step(w) == MOTES_OK, "write step 0");

  /* A declared schema: columns of a species nobody sets in a step are written empty. */
  CHECK(motes_writer_define_column(w, "ions", "x", MOTES_F32, "m") == MOTES_OK, "define ions.x");
  CHECK(motes_writer_define_column(w, "ions", "y", MOTES_F32, "m") == MOTES_OK, "define ions.y");
  CHECK(motes_writer_define_column(w, "ions", "z", MOTES_F32, NULL) == MOTES_OK, "define ions.z");
  CHECK(motes_writer_define_column(w, "ions", "z", MOTES_F32, NULL) == MOTES_OK, "same declaration again");
  CHECK(motes_writer_define_column(w, "ions", "z", MOTES_F64, NULL) == MOTES_ERROR_USAGE, "redeclared dtype refused");
  CHECK(strstr(motes_last_error(), "already declared as f32") != NULL, "message names the declared dtype");
  CHECK(motes_writer_begin_step(w, 2, 1.5) == MOTES_OK, "begin step 2");
  CHECK(motes_writer_set_column(w, "electrons", "x", MOTES_F64, &p[0].x, N, sizeof(struct particle)) == MOTES_OK, "x");
  CHECK(motes_writer_set_column(w, "electrons", "y", MOTES_F64, &p[0].y, N, sizeof(struct particle)) == MOTES_OK, "y");
  CHECK(motes_writer_set_column(w, "electrons", "z", MOTES_F64, &p[0].z, N, sizeof(struct particle)) == MOTES_OK, "z");
  CHECK(motes_writer_set_column(w, "ions", "x", MOTES_F64, &p[0].x, N, sizeof(struct particle)) == MOTES_ERROR_USAGE,
        "a set column must have its declared dtype");
  CHECK(strstr(motes_last_error(), "declared f32, set as f64") != NULL, "message names both dtypes");
  CHECK(motes_writer_write_step(w) == MOTES_OK, "write step 2 with an empty declared species");

  /* A step with a NaN position fails with a clear message and leaves step 0 alone. */
  p[10].y = NAN;
  CHECK(motes_writer_begin_step(w, 1, 1.0) == MOTES_OK, "begin step 1");
  motes_writer_set_column(w, "electrons", "x", MOTES_F64, &p[0].x, N, sizeof(struct particle));
  motes_writer_set_column(w, "electrons", "y", MOTES_F64, &p[0].y, N, sizeof(struct particle));
  motes_writer_set_column(w, "electrons", "z", MOTES_F64, &p[0].z, N, sizeof(struct particle));
  CHECK(motes_writer_write_step(w) == MOTES_ERROR_USAGE, "NaN refused");
  CHECK(strstr(motes_last_error(), "row 10") != NULL, "message names the row");
  CHECK(motes_writer_set_column(w, "electrons", "q", 42, id, N, 0) == MOTES_ERROR_USAGE, "unknown dtype refused");
  CHECK(motes_writer_close(w) == MOTES_OK, "close");
  CHECK(motes_writer_close(NULL) == MOTES_OK, "close NULL");

  /* Background writes: write_step copies the arrays and returns; the values written are those
   * given (the caller changes them at once); flush waits; an error comes back once. */
  char bpath[300];
  snprintf(bpath, sizeof bpath, "%s.background", path);
  CHECK(motes_writer_open(bpath, &w) == MOTES_OK, "open background");
  CHECK(motes_writer_set_options(w, 64, 4, 0, 0) == MOTES_OK, "options");
  CHECK(motes_writer_set_background(w, 0, 0) == MOTES_ERROR_USAGE, "max_pending 0 refused");
  CHECK(motes_writer_set_background(w, 2, 0) == MOTES_OK, "background");
  p[10].y = 0.5;
  for (int s = 0; s < 4; ++s) {
    for (int i = 0; i < N; ++i) p[i].energy = (float)(100 * s + i % 7);
    CHECK(motes_writer_begin_step(w, s, s) == MOTES_OK, "begin");
    motes_writer_set_column(w, "e", "x", MOTES_F64, &p[0].x, N, sizeof(struct particle));
    motes_writer_set_column(w, "e", "y", MOTES_F64, &p[0].y, N, sizeof(struct particle));
    motes_writer_set_column(w, "e", "z", MOTES_F64, &p[0].z, N, sizeof(struct particle));
    motes_writer_set_column(w, "e", "energy", MOTES_F32, &p[0].energy, N, sizeof(struct particle));
    motes_writer_set_column(w, "e", "id", MOTES_U64, id, N, 0);
    CHECK(motes_writer_write_step(w) == MOTES_OK, "background step queued");
  }
  for (int i = 0; i < N; ++i) p[i].energy = -1.0f;
  CHECK(motes_writer_flush(w) == MOTES_OK, "flush");
  int64_t last = -1;
  int written = 0;
  CHECK(motes_writer_last_written(w, &last, &written) == MOTES_OK && written == 1 && last == 3, "last written");
  for (int s = 0; s < 4; ++s) {
    int64_t ids[3] = {0, 9, 4999};
    double got[3];
    uint8_t found[3];
    CHECK(motes_track(bpath, s, "e", NULL, ids, 3, "energy", got, found) == MOTES_OK, "track");
    for (int k = 0; k < 3; ++k)
      CHECK(found[k] && got[k] == 100.0 * s + ids[k] % 7, "the values given, not those changed after write_step");
  }
  CHECK(motes_writer_begin_step(w, 3, 9.0) == MOTES_OK, "begin step 3 again");
  motes_writer_set_column(w, "e", "x", MOTES_F64, &p[0].x, N, sizeof(struct particle));
  motes_writer_set_column(w, "e", "y", MOTES_F64, &p[0].y, N, sizeof(struct particle));
  motes_writer_set_column(w, "e", "z", MOTES_F64, &p[0].z, N, sizeof(struct particle));
  CHECK(motes_writer_write_step(w) == MOTES_OK, "queued (refused by the writer thread)");
  CHECK(motes_writer_close(w) == MOTES_ERROR_USAGE, "close returns the queued step's error");
  CHECK(strstr(motes_last_error(), "step 3 already exists") != NULL, "message names the step");
  char bcleanup[400];
  snprintf(bcleanup, sizeof bcleanup, "rm -rf '%s'", bpath);
  CHECK(system(bcleanup) == 0, "remove the background dataset");
  CHECK(motes_writer_open(NULL, &w) == MOTES_ERROR_USAGE, "NULL path refused");

  free(p);
  free(id);
  if (failures) return 1;
  printf("C API: all checks passed (%s)\n", path);
  char cleanup[300];
  snprintf(cleanup, sizeof cleanup, "rm -rf '%s'", path);
  return system(cleanup) == 0 ? 0 : 1;
}
