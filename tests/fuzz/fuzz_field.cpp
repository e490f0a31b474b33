// libFuzzer target: any bytes given as a field file (read from memory through a byte
// source) must open cleanly or be rejected with motes::Error, never crash; an accepted file
// must read every level of boxes and decode every block. Bytes starting with "MOTESPT2",
// then a u32 length L, are a field in two parts: the L bytes after the length, and the rest
// (docs/format.md §14.7). Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, checksum
// mismatches are ignored so the fuzzer reaches the structural checks (and the block
// decoders) behind them.
//
// `fuzz_field -write_seeds=DIR` writes seeds the Python corpus cannot make (a field in two
// parts, as a parallel write makes them; a field with ZFP blocks) into DIR and exits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "motes/fields/file.hpp"
#include "motes/fields/partition.hpp"
#include "motes/io/byte_source.hpp"
#include "write_seeds.hpp"

namespace {

constexpr char kTwoParts[8] = {'M', 'O', 'T', 'E', 'S', 'P', 'T', '2'};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}


}  // namespace

void write_seeds(const std::string& dir) {
  using namespace motes::fields;
  FieldSpec s;
  s.name = "rho";
  s.dtype = motes::DType::f32;
  s.dims = {13, 9, 5};
  std::vector<float> v(s.sample_count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(0.1 * double(i)));
  FieldWriteOptions o;
  o.sync = false;
  o.block_bits = 6;
  // Two parts: the samples of each run in HZ order, as an aggregator assembles them.
  const HzOrder order(Bitmask::guess(s.dims, s.ndim));
  const FieldPartition p = plan_field_parts(s, o.block_bits, s.sample_count() * 4 / 2, 2);
  std::string parts[2];
  for (uint32_t k = 0; k < p.parts && k < 2; ++k) {
    std::vector<float> hz(p.samples(k), 0.0f);
    std::vector<uint8_t> inside(p.samples(k), 0);
    for (uint64_t j = 0; j < hz.size(); ++j) {
      const Dims pt = order.point_of_hz(p.first_sample(k) + j);
      if (pt[0] >= s.dims[0] || pt[1] >= s.dims[1] || pt[2] >= s.dims[2]) continue;
      hz[j] = v[(pt[2] * s.dims[1] + pt[1]) * s.dims[0] + pt[0]];
      inside[j] = 1;
    }
    const std::string path = dir + "/part" + std::to_string(k) + ".tmp";
    write_field_part(path, s, {hz.data()}, inside.data(), PartInfo{k, p.parts, p.first_block[k], p.first_block[k + 1] - p.first_block[k]}, o);
    parts[k] = slurp(path);
    std::remove(path.c_str());
  }
  std::string two(kTwoParts, 8);
  const uint32_t len = uint32_t(parts[0].size());
  two.append(reinterpret_cast<const char*>(&len), 4);
  two += parts[0] + parts[1];
  std::ofstream(dir + "/two-parts", std::ios::binary) << two;
  // ZFP blocks, and a block kept exact (a NaN in it).
  s.tolerance = 1e-3;
  v[3] = NAN;
  write_field_file(dir + "/zfp.mfd", s, {v.data()}, o);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    std::shared_ptr<motes::fields::FieldFile> f;
    uint32_t len = 0;
    if (size >= 12 && std::memcmp(data, kTwoParts, 8) == 0 && (std::memcpy(&len, data + 8, 4), len <= size - 12)) {
      f = motes::fields::FieldFile::open(std::vector<std::shared_ptr<const motes::ByteSource>>{
          motes::memory_source(bytes.substr(12, len)), motes::memory_source(bytes.substr(12 + len))});
    } else {
      f = motes::fields::FieldFile::open(motes::memory_source(bytes));
    }
    const auto& spec = f->spec();
    if (spec.sample_count() > (uint64_t(1) << 22)) return 0;  // a grid this large reads too long for a fuzz run
    const size_t size_of = motes::dtype_size(spec.dtype);
    for (int level = 0; level <= f->levels(); ++level) {
      for (const motes::fields::Dims& hi : {spec.dims, motes::fields::Dims{std::max<uint64_t>(1, spec.dims[0] / 2), spec.dims[1], 1}}) {
        const motes::fields::Region r = f->region({0, 0, 0}, hi, level);
        std::vector<char> out(r.size() * size_of);
        for (size_t c = 0; c < spec.component_count(); ++c) f->read(r, c, out.data(), 1);
      }
    }
    f->verify();
  } catch (const motes::Error&) {
  }
  return 0;
}
