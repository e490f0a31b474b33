// jets: a small MPI particle code that writes its particles with motes.
//
//   mpirun -n 4 ./motes_jets OUTDIR [steps=100] [write_every=10] [per_jet=1000] [seed=1]
//
// Three nozzles on the walls of the unit box spray particles in Gaussian cones; the
// particles fly ballistically under weak drag and gravity, leave through the walls,
// and migrate between the ranks of a 3-D rank grid as they cross subdomains. Every
// write_every steps all ranks write their particles as one motes step (OUTDIR must
// not hold those steps already: motes refuses to overwrite a step).
//
// This is the example to copy. The motes part is open_writer() and write_particles();
// the rest is only enough of a particle code to give them realistic input: ranks whose
// particle counts differ and change, any of which may hold none (a subdomain no jet
// has reached yet, or one all particles have left).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <motes/motes_mpi.h>

namespace {

constexpr float kDt = 0.05f;      // particles cross the box in about 20 steps
constexpr float kDrag = 0.3f;     // linear drag rate
constexpr float kGravity = 0.5f;  // along -z: the jets bend down
constexpr int kJets = 3;

// Per-particle bookkeeping kept together in one struct, as many codes keep their
// "tags": motes reads a field of it in place with a stride, no copy needed.
struct Tags {
  int32_t jet;   // which nozzle emitted the particle
  int32_t born;  // step of injection
};

// The state as structure of arrays: the push vectorises, and every array is a
// motes column as it stands.
struct Particles {
  std::vector<float> x, y, z, ux, uy, uz;
  std::vector<uint64_t> id;
  std::vector<Tags> tags;
  size_t size() const { return x.size(); }
};

// One particle as it travels between ranks.
struct Record {
  float pos[3], u[3];
  uint64_t id;
  Tags tags;
};

struct Nozzle {
  float pos[3], dir[3];  // dir: the cone axis (normalised at start)
};
Nozzle nozzles[kJets] = {
    {{0.0f, 0.5f, 0.3f}, {1.0f, 0.0f, 0.45f}},     // left wall, aimed up: arcs over the box
    {{0.5f, 0.0f, 0.6f}, {0.2f, 1.0f, 0.1f}},      // front wall
    {{0.7f, 0.6f, 1.0f}, {-0.3f, -0.2f, -1.0f}},  // ceiling, aimed down
};

struct Domain {
  MPI_Comm cart;
  int rank, size, dims[3] = {0, 0, 0};
  // Cell (i, j, k) of the rank grid -> rank in cart, asked of MPI once: with reorder
  // on, MPI may renumber the ranks to fit the machine.
  std::vector<int> rank_of;
  int owner(float x, float y, float z) const {
    const float p[3] = {x, y, z};
    int c[3];
    for (int a = 0; a < 3; ++a) c[a] = std::clamp(int(p[a] * float(dims[a])), 0, dims[a] - 1);
    return rank_of[size_t((c[0] * dims[1] + c[1]) * dims[2] + c[2])];
  }
};

void check(motes_status s, const char* what) {
  if (s == MOTES_OK) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "jets: rank %d: %s failed (status %d): %s\n", rank, what, int(s), motes_last_error());
  // set_column's checks are local: a rank that stopped here would leave the others
  // waiting in the collective write_step for ever. MPI_Abort ends the whole job.
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Every nozzle's owner emits per_jet particles with directions in a Gaussian cone and
// speeds ~N(1, 0.1). Ids are rank << 40 | counter: unique with no communication.
void inject(Particles& p, const Domain& d, int step, int per_jet, std::mt19937_64& rng, uint64_t& next_id) {
  std::normal_distribution<float> spread(0.0f, 0.15f), speed(1.0f, 0.1f);
  std::uniform_real_distribution<float> within(0.0f, 1.0f);
  for (int j = 0; j < kJets; ++j) {
    const Nozzle& nz = nozzles[j];
    if (d.owner(nz.pos[0], nz.pos[1], nz.pos[2]) != d.rank) continue;
    // Two unit vectors across the axis span the cone.
    const float* a = nz.dir;
    float e1[3] = {-a[1], a[0], 0.0f};
    if (std::fabs(a[2]) > 0.9f) e1[0] = 0.0f, e1[1] = -a[2], e1[2] = a[1];
    const float l1 = std::sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    for (float& v : e1) v /= l1;
    const float e2[3] = {a[1] * e1[2] - a[2] * e1[1], a[2] * e1[0] - a[0] * e1[2], a[0] * e1[1] - a[1] * e1[0]};
    for (int i = 0; i < per_jet; ++i) {
      const float s1 = spread(rng), s2 = spread(rng), v = speed(rng);
      float u[3];
      for (int k = 0; k < 3; ++k) u[k] = a[k] + s1 * e1[k] + s2 * e2[k];
      const float norm = v / std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
      for (float& c : u) c *= norm;
      // Emission times spread over the step, or the jet would be a train of puffs.
      const float t = within(rng) * kDt;
      p.x.push_back(nz.pos[0] + u[0] * t), p.y.push_back(nz.pos[1] + u[1] * t), p.z.push_back(nz.pos[2] + u[2] * t);
      p.ux.push_back(u[0]), p.uy.push_back(u[1]), p.uz.push_back(u[2]);
      p.id.push_back((uint64_t(d.rank) << 40) | next_id++);
      p.tags.push_back({j, step});
    }
  }
}

// Moves every particle one step and drops those that left the box; returns how many.
uint64_t push(Particles& p) {
  const size_t n = p.size();
  for (size_t i = 0; i < n; ++i) {
    p.ux[i] -= kDrag * p.ux[i] * kDt;
    p.uy[i] -= kDrag * p.uy[i] * kDt;
    p.uz[i] -= (kDrag * p.uz[i] + kGravity) * kDt;
    p.x[i] += p.ux[i] * kDt, p.y[i] += p.uy[i] * kDt, p.z[i] += p.uz[i] * kDt;
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    auto inside = [](float c) { return c >= 0.0f && c <= 1.0f; };
    if (!inside(p.x[i]) || !inside(p.y[i]) || !inside(p.z[i])) continue;
    p.x[kept] = p.x[i], p.y[kept] = p.y[i], p.z[kept] = p.z[i];
    p.ux[kept] = p.ux[i], p.uy[kept] = p.uy[i], p.uz[kept] = p.uz[i];
    p.id[kept] = p.id[i], p.tags[kept] = p.tags[i];
    ++kept;
  }
  for (auto* v : {&p.x, &p.y, &p.z, &p.ux, &p.uy, &p.uz}) v->resize(kept);
  p.id.resize(kept), p.tags.resize(kept);
  return n - kept;
}

// Sends every particle to the rank that owns its position. A fast particle or a small
// subdomain can skip a neighbour, so this is an all-to-all rather than a halo swap;
// particles that stay go through it too, which is simpler and costs only a copy.
void migrate(Particles& p, const Domain& d) {
  const size_t n = p.size(), P = size_t(d.size);
  std::vector<int> dest(n), send(P, 0), recv(P, 0), sdisp(P, 0), rdisp(P, 0);
  for (size_t i = 0; i < n; ++i) ++send[size_t(dest[i] = d.owner(p.x[i], p.y[i], p.z[i]))];
  MPI_Alltoall(send.data(), 1, MPI_INT, recv.data(), 1, MPI_INT, d.cart);
  for (size_t r = 1; r < P; ++r) sdisp[r] = sdisp[r - 1] + send[r - 1], rdisp[r] = rdisp[r - 1] + recv[r - 1];
  std::vector<Record> out(n), in(size_t(rdisp[P - 1] + recv[P - 1]));
  std::vector<int> at = sdisp;
  for (size_t i = 0; i < n; ++i)
    out[size_t(at[size_t(dest[i])]++)] = {{p.x[i], p.y[i], p.z[i]}, {p.ux[i], p.uy[i], p.uz[i]}, p.id[i], p.tags[i]};
  // Records go as bytes: every rank runs the same binary. Counts are ints, so this
  // simple version stops at 2 GiB per pair of ranks.
  for (auto* v : {&send, &recv, &sdisp, &rdisp})
    for (int& c : *v) c *= int(sizeof(Record));
  MPI_Alltoallv(out.data(), send.data(), sdisp.data(), MPI_BYTE, in.data(), recv.data(), rdisp.data(), MPI_BYTE, d.cart);
  p = Particles{};
  for (const Record& r : in) {
    p.x.push_back(r.pos[0]), p.y.push_back(r.pos[1]), p.z.push_back(r.pos[2]);
    p.ux.push_back(r.u[0]), p.uy.push_back(r.u[1]), p.uz.push_back(r.u[2]);
    p.id.push_back(r.id), p.tags.push_back(r.tags);
  }
}

motes_writer* open_writer(const char* dir, const Domain& d) {
  motes_writer* w = nullptr;
  // Any communicator will do; the grid's is the one this code lives in. motes
  // duplicates it, so its collective traffic never mixes with the migration's.
  check(motes_writer_open_parallel(dir, d.cart, &w), "motes_writer_open_parallel");
  // Part-file size is the knob a code tunes for its file system (0: motes chooses);
  // best_axis lets the aggregation tree split along whichever axis balances best.
  check(motes_writer_set_aggregation(w, 0, "adaptive", 1), "motes_writer_set_aggregation");
  return w;
}

// Collective: every rank calls it, with whatever particles it holds (maybe none).
void write_particles(motes_writer* w, const Particles& p, const Domain& d, int step, uint64_t injected,
                     uint64_t removed) {
  const uint64_t n = p.size();
  // The push has no use for the energy, so it is made only here. Like every column it
  // must stay alive until write_step returns: motes reads the arrays in place then.
  std::vector<float> energy(n);
  for (size_t i = 0; i < n; ++i) energy[i] = 0.5f * (p.ux[i] * p.ux[i] + p.uy[i] * p.uy[i] + p.uz[i] * p.uz[i]);
  uint64_t local[2] = {n, removed}, global[2] = {0, 0};
  MPI_Allreduce(local, global, 2, MPI_UINT64_T, MPI_SUM, d.cart);

  const double t0 = MPI_Wtime();
  check(motes_writer_begin_step(w, step, double(step) * kDt), "motes_writer_begin_step");
  // Every rank must pass the same attributes (motes checks), so they hold global values only.
  char attributes[256];
  std::snprintf(attributes, sizeof attributes,
                "{\"dt\": %g, \"injected\": %llu, \"removed\": %llu, \"ranks\": %d, \"grid\": [%d, %d, %d]}",
                double(kDt), (unsigned long long)injected, (unsigned long long)global[1], d.size, d.dims[0], d.dims[1],
                d.dims[2]);
  check(motes_writer_set_step_attributes(w, attributes), "motes_writer_set_step_attributes");
  const char* sp = "particles";
  check(motes_writer_set_column(w, sp, "x", MOTES_F32, p.x.data(), n, 0), "set_column x");
  check(motes_writer_set_column(w, sp, "y", MOTES_F32, p.y.data(), n, 0), "set_column y");
  check(motes_writer_set_column(w, sp, "z", MOTES_F32, p.z.data(), n, 0), "set_column z");
  check(motes_writer_set_column(w, sp, "ux", MOTES_F32, p.ux.data(), n, 0), "set_column ux");
  check(motes_writer_set_column(w, sp, "uy", MOTES_F32, p.uy.data(), n, 0), "set_column uy");
  check(motes_writer_set_column(w, sp, "uz", MOTES_F32, p.uz.data(), n, 0), "set_column uz");
  check(motes_writer_set_column(w, sp, "energy", MOTES_F32, energy.data(), n, 0), "set_column energy");
  check(motes_writer_set_column(w, sp, "id", MOTES_U64, p.id.data(), n, 0), "set_column id");
  // Fields of an array of structs: the stride is the struct size. (A rank with no
  // particles passes NULL: &tags[0] of an empty vector is not a pointer to take.)
  const Tags* tags = n ? p.tags.data() : nullptr;
  check(motes_writer_set_column(w, sp, "jet", MOTES_I32, tags ? &tags->jet : nullptr, n, sizeof(Tags)), "set_column jet");
  check(motes_writer_set_column(w, sp, "born", MOTES_I32, tags ? &tags->born : nullptr, n, sizeof(Tags)),
        "set_column born");
  check(motes_writer_set_unit(w, sp, "energy", "0.5 |u|^2, u in box lengths per time unit"), "set_unit energy");
  check(motes_writer_write_step(w), "motes_writer_write_step");
  double seconds = MPI_Wtime() - t0, slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, d.cart);
  if (d.rank == 0)
    std::printf("step %5d  particles %10llu  write %.4f s\n", step, (unsigned long long)global[0], slowest);
}

long arg(int argc, char** argv, int i, long fallback) {
  if (argc <= i) return fallback;
  char* end = nullptr;
  const long v = std::strtol(argv[i], &end, 10);
  return *end || v <= 0 ? -1 : v;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long steps = arg(argc, argv, 2, 100), every = arg(argc, argv, 3, 10), per_jet = arg(argc, argv, 4, 1000),
             seed = arg(argc, argv, 5, 1);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (argc < 2 || steps < 0 || every < 0 || per_jet < 0 || seed < 0) {
    if (world_rank == 0)
      std::fprintf(stderr, "usage: mpirun -n N %s OUTDIR [steps=100] [write_every=10] [per_jet=1000] [seed=1]\n"
                           "       (numbers are positive integers)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }

  Domain d;
  MPI_Comm_size(MPI_COMM_WORLD, &d.size);
  MPI_Dims_create(d.size, 3, d.dims);
  const int periodic[3] = {0, 0, 0};  // walls: particles leave, they do not wrap around
  MPI_Cart_create(MPI_COMM_WORLD, 3, d.dims, periodic, 1, &d.cart);
  MPI_Comm_rank(d.cart, &d.rank);
  for (int i = 0; i < d.dims[0]; ++i)
    for (int j = 0; j < d.dims[1]; ++j)
      for (int k = 0; k < d.dims[2]; ++k) {
        const int c[3] = {i, j, k};
        MPI_Cart_rank(d.cart, c, &d.rank_of.emplace_back());
      }
  for (Nozzle& nz : nozzles) {
    const float l = std::sqrt(nz.dir[0] * nz.dir[0] + nz.dir[1] * nz.dir[1] + nz.dir[2] * nz.dir[2]);
    for (float& c : nz.dir) c /= l;
  }
  if (d.rank == 0)
    std::printf("jets: %d ranks as a %d x %d x %d grid, %ld steps, writing every %ld to %s\n", d.size, d.dims[0],
                d.dims[1], d.dims[2], steps, every, argv[1]);

  std::mt19937_64 rng(uint64_t(seed) * 1000003u + uint64_t(d.rank));  // one stream per rank
  Particles p;
  uint64_t next_id = 0, removed = 0;
  motes_writer* w = open_writer(argv[1], d);
  for (int step = 1; step <= steps; ++step) {
    inject(p, d, step, int(per_jet), rng, next_id);
    removed += push(p);
    migrate(p, d);
    if (step % every == 0) {
      write_particles(w, p, d, step, uint64_t(kJets) * uint64_t(per_jet) * uint64_t(every), removed);
      removed = 0;
    }
  }
  check(motes_writer_close(w), "motes_writer_close");  // before MPI_Finalize: it frees its communicator
  MPI_Comm_free(&d.cart);
  MPI_Finalize();
  return 0;
}
