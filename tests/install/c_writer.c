/* A C program built against an installed motes with pkg-config only:
 *
 *   cc -std=c11 c_writer.c -o c_writer $(pkg-config --cflags --libs motes)
 *   ./c_writer OUTDIR [VERSION]
 *   mpicc -std=c11 -DWITH_MPI c_writer.c -o c_writer_mpi $(pkg-config --cflags --libs motes-mpi)
 *   mpirun -n 2 ./c_writer_mpi OUTDIR [VERSION]
 *
 * Writes steps 1, 2, 3 of 1000 particles per process in species "particles", with the
 * columns and attribute the mini-apps write, so examples/miniapp/check_output.py
 * checks the result (OUTDIR must not exist yet). VERSION, if given (that of
 * `pkg-config --modversion motes`), must be the one motes_version() reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WITH_MPI
#include <motes/motes_mpi.h>
#else
#include <motes/motes.h>
#endif

enum { N = 1000, STEPS = 3 };

static int rank = 0;

static void check(motes_status status, const char* what) {
  if (status == MOTES_OK) return;
  fprintf(stderr, "c_writer: rank %d: %s failed: %s\n", rank, what, motes_last_error());
#ifdef WITH_MPI
  MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  exit(1);
}

/* Deterministic numbers in [0, 1). */
static float uniform(uint64_t* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)(*state >> 40) / (float)(1ULL << 24);
}

int main(int argc, char** argv) {
#ifdef WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s OUTDIR [VERSION]\n", argv[0]);
    return 2;
  }
  int major, minor, patch;
  char version[64];
  motes_version(&major, &minor, &patch);
  snprintf(version, sizeof version, "%d.%d.%d", major, minor, patch);
  if (argc == 3 && strcmp(version, argv[2]) != 0) {
    fprintf(stderr, "c_writer: the library says version %s, pkg-config %s\n", version, argv[2]);
    return 1;
  }

  static float x[N], y[N], z[N], ux[N], uy[N], uz[N], energy[N];
  static uint64_t id[N];
  static int32_t jet[N];
  uint64_t state = 12345 + (uint64_t)rank;
  motes_writer* w = NULL;
#ifdef WITH_MPI
  check(motes_writer_open_parallel(argv[1], MPI_COMM_WORLD, &w), "open_parallel");
#else
  check(motes_writer_open(argv[1], &w), "open");
#endif
  for (int step = 1; step <= STEPS; ++step) {
    for (int i = 0; i < N; ++i) {
      x[i] = uniform(&state);
      y[i] = uniform(&state);
      z[i] = uniform(&state);
      ux[i] = 2 * uniform(&state) - 1;
      uy[i] = 2 * uniform(&state) - 1;
      uz[i] = 2 * uniform(&state) - 1;
      energy[i] = 0.5f * (ux[i] * ux[i] + uy[i] * uy[i] + uz[i] * uz[i]);
      id[i] = (uint64_t)rank << 40 | (uint64_t)(step * N + i);
      jet[i] = i % 3;
    }
    check(motes_writer_begin_step(w, step, 0.05 * step), "begin_step");
    check(motes_writer_set_step_attributes(w, "{\"dt\": 0.05}"), "set_step_attributes");
    struct {
      const char* name;
      motes_dtype dtype;
      const void* data;
    } columns[] = {{"x", MOTES_F32, x},   {"y", MOTES_F32, y},   {"z", MOTES_F32, z},
                   {"ux", MOTES_F32, ux}, {"uy", MOTES_F32, uy}, {"uz", MOTES_F32, uz},
                   {"energy", MOTES_F32, energy}, {"id", MOTES_U64, id}, {"jet", MOTES_I32, jet}};
    for (size_t c = 0; c < sizeof columns / sizeof columns[0]; ++c)
      check(motes_writer_set_column(w, "particles", columns[c].name, columns[c].dtype, columns[c].data, N, 0),
            columns[c].name);
    check(motes_writer_write_step(w), "write_step");
  }
  check(motes_writer_close(w), "close");
  if (rank == 0) printf("c_writer: motes %s, %d steps written to %s\n", version, STEPS, argv[1]);
#ifdef WITH_MPI
  MPI_Finalize();
#endif
  return 0;
}
