// libFuzzer target: any bytes given to codec::decode as a coded block (docs/format.md §4.12),
// for every value type, must decode or be refused with a message, never crash or read past
// the block (zfp blocks included: their decoder reads from a padded copy). Input: byte 0
// picks the value type, bytes 1-4 the number of values (u32, clamped to a block's 1 MiB),
// the rest is the block. The quantile predictors get fixed codes, bases and edges.
//
// Blocks of packed words are also read value by value (codec::AddressableBlock): a block that
// decodes reads every value as the decoded block holds it.
//
// `fuzz_codec -write_seeds=DIR` writes a seed corpus of valid blocks of every predictor
// (zfp ones of 1-3-D boxes, hierarchical or not; packed words of each unit form) into DIR
// and exits.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/codec/zfp.hpp"
#include "write_seeds.hpp"

using namespace motes::codec;

namespace {

const ValueType kTypes[] = {{4, true, true},  {8, true, true},  {1, false, true}, {2, false, true},
                            {4, false, true}, {8, false, true}, {1, false, false}, {2, false, false},
                            {4, false, false}, {8, false, false}};
constexpr size_t kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);

struct Fixed {
  std::vector<uint8_t> codes = std::vector<uint8_t>(kMaxBlockBytes);
  std::vector<uint64_t> bases = std::vector<uint64_t>(256);
  std::vector<double> edges = std::vector<double>(257);
  Fixed() {
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint8_t(i * 7 + (i >> 9));
    for (size_t k = 0; k < 256; ++k) bases[k] = uint64_t(k) * 0x0101010101010101ull;
    for (size_t k = 0; k < 257; ++k) edges[k] = -64.0 + 0.5 * double(k);
  }
};
const Fixed& fixed() {
  static const Fixed f;
  return f;
}

Context context() {
  Context ctx;
  ctx.codes = fixed().codes.data();
  ctx.bases = fixed().bases.data();
  ctx.edges = fixed().edges.data();
  return ctx;
}

void write_seed(const std::string& dir, const std::string& name, uint8_t type, uint32_t n, const std::string& block) {
  std::string bytes(1, char(type));
  bytes.append(reinterpret_cast<const char*>(&n), 4);
  bytes += block;
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (!f) return;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}


}  // namespace

void write_seeds(const std::string& dir) {
  int count = 0;
  // zfp blocks: smooth f32 and f64 boxes of 1-3 axes, block 0 and blocks of one level.
  for (const char* axes : {"000000", "0101010", "012012012", "2102102101", "01201201201"}) {
    for (bool hierarchical : {false, true}) {
      for (uint8_t type : {uint8_t(0), uint8_t(1)}) {
        const size_t n = size_t(1) << std::strlen(axes);
        std::vector<double> v64(n);
        std::vector<float> v32(n);
        for (size_t i = 0; i < n; ++i) v64[i] = std::sin(0.01 * double(i)) + 0.001 * double(i % 13), v32[i] = float(v64[i]);
        Context ctx;
        ctx.zfp_tolerance = type ? 1e-6 : 1e-3;
        ctx.zfp_hierarchical = hierarchical;
        ctx.zfp_axes = axes;
        std::string block;
        if (encode_zfp(kTypes[type], type ? static_cast<const void*>(v64.data()) : v32.data(), n, ctx, block))
          write_seed(dir, "zfp-" + std::to_string(count++), type, uint32_t(n), block);
      }
    }
  }
  // The other predictors, layouts and coders on a few types.
  const Context ctx = context();
  for (uint8_t type = 0; type < kTypeCount; ++type) {
    const ValueType t = kTypes[type];
    const size_t n = 300;
    std::vector<unsigned char> values(n * t.size);
    for (size_t i = 0; i < n; ++i) {
      if (t.is_float && t.size == 4) {
        float x = float(i) * 0.25f;
        std::memcpy(&values[i * 4], &x, 4);
      } else if (t.is_float) {
        double x = double(i) * 0.25;
        std::memcpy(&values[i * 8], &x, 8);
      } else {
        const uint64_t x = i * 3 + 1000;
        std::memcpy(&values[i * t.size], &x, t.size);
      }
    }
    for (Predictor p : {Predictor::none, Predictor::delta, Predictor::xor_, Predictor::quantile, Predictor::offset,
                        Predictor::grid, Predictor::grid_delta, Predictor::grid_quantile}) {
      for (Layout layout : {Layout::planes, Layout::bits, Layout::packed, Layout::binned}) {
        Plan plan;
        plan.predictor = p;
        plan.layout = layout;
        plan.coders.assign(layout == Layout::planes && t.size > 1 ? t.size : 1, Coder::zstd);
        if (p == Predictor::delta) plan.coders.assign(plan.coders.size(), Coder::lz4);
        Context c = ctx;
        c.grid_origin = 0, c.grid_step = 0.25;
        std::string block;
        encode(plan, t, values.data(), n, c, block);
        write_seed(dir, "block-" + std::to_string(count++), type, uint32_t(n), block);
      }
    }
  }
  // Packed words of each unit form: few distinct values (dictionaries of words) and values
  // crossing zero (dictionaries of high parts), 1000 values in four units.
  for (uint8_t type : {uint8_t(0), uint8_t(1), uint8_t(4)}) {
    const ValueType t = kTypes[type];
    const size_t n = 1000;
    std::vector<unsigned char> values(n * t.size);
    for (size_t i = 0; i < n; ++i) {
      const double v = i < 500 ? double(int(i * 7919 % 5) - 2) : std::sin(double(i) * 0.37) * 100;
      if (t.is_float && t.size == 4) {
        const float x = float(v);
        std::memcpy(&values[i * 4], &x, 4);
      } else if (t.is_float) {
        std::memcpy(&values[i * 8], &v, 8);
      } else {
        const int32_t x = int32_t(v);
        std::memcpy(&values[i * 4], &x, 4);
      }
    }
    Plan plan;
    plan.predictor = Predictor::offset;
    plan.layout = Layout::packed;
    plan.coders = {Coder::raw};
    std::string block;
    encode(plan, t, values.data(), n, ctx, block);
    write_seed(dir, "packed-" + std::to_string(count++), type, uint32_t(n), block);
  }
  std::printf("fuzz_codec: wrote %d seeds into %s\n", count, dir.c_str());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const ValueType t = kTypes[data[0] % kTypeCount];
  uint32_t n32 = 0;
  std::memcpy(&n32, data + 1, 4);
  const size_t n = std::min<size_t>(n32, kMaxBlockBytes / t.size);
  // The block in a buffer of its own size, so AddressSanitizer sees any read past it.
  std::vector<unsigned char> block(data + 5, data + size);
  std::vector<unsigned char> out(n * t.size + 1);
  const std::string problem = decode(t, block.data(), block.size(), out.data(), n, context());
  Plan plan;
  const bool described = describe(block.data(), block.size(), plan);
  if (problem.empty() && !described) std::abort();  // a block that decodes describes itself
  // A block addressable value by value reads each value as the whole block decodes it.
  AddressableBlock view;
  std::string why;
  if (view.open(t, block.data(), block.size(), n, why)) {
    unsigned char v[8];
    for (size_t i = 0; i < n; ++i) {
      const bool ok = view.value(i, fixed().codes.data(), fixed().bases.data(), v);
      if (problem.empty() && (!ok || std::memcmp(v, out.data() + i * t.size, t.size) != 0)) std::abort();
    }
  }
  if (problem.empty() && plan.predictor == Predictor::zfp) {
    // A zfp block that decodes is f32/f64 with n = 2^bits: its values compare with themselves.
    if (max_abs_error(t, out.data(), out.data(), n) != 0 &&
        max_abs_error(t, out.data(), out.data(), n) != INFINITY)
      std::abort();
  }
  return 0;
}
