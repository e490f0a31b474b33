// Shared fixtures for the C++ tests: deterministic synthetic columns and temp paths.
#pragma once

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "motes/core/types.hpp"
#include "motes/particles/step_index.hpp"
#include "motes/particles/writer.hpp"

namespace motes::test {

struct Columns {
  std::vector<float> x, y, z, energy;
  std::vector<double> noise;
  std::vector<uint64_t> id;
  std::vector<int32_t> kind;

  std::vector<ColumnView> views() const {
    auto v = [](const char* name, DType t, const void* p, uint64_t n) {
      ColumnView c;
      c.spec = {name, t, IndexKind::automatic, ""};
      c.data = p;
      c.count = n;
      return c;
    };
    uint64_t n = x.size();
    return {v("x", DType::f32, x.data(), n),          v("y", DType::f32, y.data(), n),
            v("z", DType::f32, z.data(), n),          v("energy", DType::f32, energy.data(), n),
            v("noise", DType::f64, noise.data(), n),  v("id", DType::u64, id.data(), n),
            v("kind", DType::i32, kind.data(), n)};
  }
};

// Clustered points (Gaussian blobs) with a smooth attribute, a noisy one, ids and a category.
inline Columns make_columns(uint64_t n, uint32_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Columns c;
  float centers[4][3] = {{0.2f, 0.2f, 0.2f}, {0.7f, 0.3f, 0.5f}, {0.5f, 0.8f, 0.1f}, {0.9f, 0.9f, 0.9f}};
  for (uint64_t i = 0; i < n; ++i) {
    int b = int(rng() % 5);
    float px, py, pz;
    if (b == 4) {
      px = u(rng), py = u(rng), pz = u(rng);
    } else {
      float s = 0.02f * float(b + 1);
      px = centers[b][0] + s * g(rng), py = centers[b][1] + s * g(rng), pz = centers[b][2] + s * g(rng);
    }
    c.x.push_back(px);
    c.y.push_back(py);
    c.z.push_back(pz);
    c.energy.push_back(px * px + 0.5f * py);
    c.noise.push_back(double(g(rng)));
    c.id.push_back(i);
    c.kind.push_back(int32_t(rng() % 3) - 1);
  }
  return c;
}

inline std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("motes-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Splits `all` into `parts` slabs along x (x in [0, 1)) and writes them as the part files
// of a step index at index_path (leaves of leaf_size); returns the slabs.
inline std::vector<Columns> write_slabs(const Columns& all, int parts, const std::string& index_path,
                                        uint32_t leaf_size) {
  std::vector<Columns> slabs(static_cast<size_t>(parts));
  for (size_t i = 0; i < all.x.size(); ++i) {
    Columns& s = slabs[size_t(std::clamp(int(all.x[i] * float(parts)), 0, parts - 1))];
    s.x.push_back(all.x[i]), s.y.push_back(all.y[i]), s.z.push_back(all.z[i]);
    s.energy.push_back(all.energy[i]), s.noise.push_back(all.noise[i]), s.id.push_back(all.id[i]);
    s.kind.push_back(all.kind[i]);
  }
  WriteOptions o;
  o.layout.leaf_size = leaf_size;
  o.sync = false;
  std::vector<PartSummary> summaries;
  std::vector<ColumnSpec> schema;
  for (size_t k = 0; k < slabs.size(); ++k) {
    WriteSummary w = write_particle_file(StepIndex::part_path(index_path, k), slabs[k].views(), o);
    summaries.push_back({w.particle_count, w.file_bytes, w.bounds, w.columns});
    if (schema.empty())
      for (const ColumnSummary& c : w.columns) schema.push_back({c.name, c.dtype, c.index, ""});
  }
  StepIndex::write(index_path, schema, summaries, false);
  return slabs;
}

}  // namespace motes::test
