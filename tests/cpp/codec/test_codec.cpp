// Block codecs: every predictor, layout and coder round-trips every dtype bit for bit;
// damaged blocks are refused with a message, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "motes/codec/codec.hpp"
#include "motes/codec/shuffle.hpp"
#include "motes/core/types.hpp"
#include "codec_values.hpp"

using namespace motes;
using namespace motes::codec;

namespace {

// n values of dtype `code` as bytes: smooth, noisy, constant, or with NaN/inf/extremes.
std::vector<unsigned char> values(uint8_t code, size_t n, int shape, uint64_t seed) {
  return test::codec_values(code, n, shape, seed);
}

// Codes and bases as the writer makes them: 256 sorted edges over the values.
struct Quantiles {
  std::vector<uint8_t> codes;
  std::vector<uint64_t> bases;
  std::vector<double> edges;
};
Quantiles quantiles(uint8_t code, const std::vector<unsigned char>& bytes, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = load_as_double(DType(code), bytes.data(), i);
  std::vector<double> s;
  for (double x : v)
    if (!std::isnan(x)) s.push_back(x);
  std::sort(s.begin(), s.end());
  std::vector<double> edges(257, 0.0);
  for (size_t k = 0; k <= 256 && !s.empty(); ++k) edges[k] = s[std::min(s.size() - 1, k * s.size() / 256)];
  Quantiles q;
  q.bases = quantile_bases(code, edges.data());
  q.edges = edges;
  for (double x : v) {
    uint32_t c = 0;
    for (uint32_t k = 1; k < 256; ++k) c += edges[k] <= x;
    q.codes.push_back(uint8_t(c));
  }
  return q;
}

}  // namespace

TEST(Shuffle, TransposesEveryWidthAndLength) {
  for (uint32_t size : {1u, 2u, 4u, 8u, 3u}) {
    for (size_t n : {0u, 1u, 15u, 16u, 17u, 100u, 1000u}) {
      std::vector<unsigned char> in(n * size), back(n * size);
      for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 131 + 7);
      std::vector<std::vector<unsigned char>> planes(size, std::vector<unsigned char>(n));
      std::vector<unsigned char*> p;
      for (auto& x : planes) p.push_back(x.data());
      shuffle(in.data(), n, size, p.data());
      for (size_t i = 0; i < n; ++i)
        for (uint32_t k = 0; k < size; ++k) ASSERT_EQ(planes[k][i], in[i * size + k]) << size << " " << n;
      std::vector<const unsigned char*> cp(p.begin(), p.end());
      unshuffle(cp.data(), n, size, back.data());
      ASSERT_EQ(back, in) << size << " " << n;
    }
  }
}

TEST(Shuffle, BitPlanesHoldBitBOfBytePlaneKAndComeBack) {
  std::mt19937_64 rng(5);
  for (uint32_t size : {1u, 2u, 4u, 8u}) {
    for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 1000u}) {
      const size_t m = (n + 7) / 8;
      std::vector<std::vector<unsigned char>> bytes(size, std::vector<unsigned char>(n));
      std::vector<const unsigned char*> in;
      for (auto& pl : bytes) {
        for (auto& b : pl) b = uint8_t(rng());
        in.push_back(pl.data());
      }
      std::vector<unsigned char> bits(8 * size * m, 0xEE);
      bit_planes(in.data(), n, size, bits.data());
      for (uint32_t k = 0; k < size; ++k)
        for (uint32_t b = 0; b < 8; ++b)
          for (size_t i = 0; i < 8 * m; ++i) {
            const int want = i < n ? (bytes[k][i] >> b) & 1 : 0;
            ASSERT_EQ((bits[(8 * k + b) * m + i / 8] >> (i % 8)) & 1, want) << size << " " << n << " " << k << " " << b << " " << i;
          }
      std::vector<std::vector<unsigned char>> back(size, std::vector<unsigned char>(n, 0x55));
      std::vector<unsigned char*> out;
      for (auto& pl : back) out.push_back(pl.data());
      ASSERT_TRUE(byte_planes(bits.data(), n, size, out.data()));
      ASSERT_EQ(back, bytes) << size << " " << n;
      if (n % 8) {  // a bit past the last value is refused
        bits[m - 1] |= 0x80;
        EXPECT_FALSE(byte_planes(bits.data(), n, size, out.data())) << size << " " << n;
      }
    }
  }
}

TEST(Codec, EveryPlanRoundTripsEveryDtypeBitForBit) {
  const std::vector<Predictor> predictors{Predictor::none, Predictor::delta, Predictor::xor_, Predictor::quantile,
                                          Predictor::offset};
  int checked = 0;
  for (uint8_t code = 1; dtype_valid(code); ++code) {
    const ValueType t = value_type(code);
    for (int shape = 0; shape < 4; ++shape) {
      for (size_t n : {1u, 17u, 1000u, 4096u}) {
        const auto in = values(code, n, shape, code * 100 + shape);
        const Quantiles q = quantiles(code, in, n);
        for (Predictor pred : predictors) {
          for (Coder coder : {Coder::raw, Coder::zstd, Coder::lz4}) {
            for (Layout layout : {Layout::whole, Layout::planes, Layout::bits, Layout::packed}) {
              const bool planes = layout == Layout::planes;
              if (planes && t.size == 1) continue;
              Plan plan;
              plan.predictor = pred;
              plan.layout = layout;
              plan.coders.assign(planes ? t.size : 1, coder);
              const Context ctx{q.codes.data(), q.bases.data()};
              std::string stored;
              encode(plan, t, in.data(), n, ctx, stored);
              std::vector<unsigned char> out(in.size(), 0xAA);
              ASSERT_EQ(decode(t, stored.data(), stored.size(), out.data(), n, ctx), "")
                  << dtype_name(DType(code)) << " " << predictor_name(pred) << " " << coder_name(coder);
              ASSERT_EQ(out, in) << dtype_name(DType(code)) << " shape " << shape << " n " << n << " "
                                 << predictor_name(pred) << " " << coder_name(coder) << " layout " << int(layout);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 3000);
}

TEST(Codec, CompressesWhatIsCompressibleAndStoresNoiseRaw) {
  const size_t n = 16384;
  const ValueType f32 = value_type(uint8_t(DType::f32));
  auto smooth = values(uint8_t(DType::f32), n, 0, 1);
  std::vector<Sample> s{{smooth.data(), n, {}}};
  Plan p = choose(f32, {Predictor::none, Predictor::delta, Predictor::xor_}, s, 1);
  std::string stored;
  encode(p, f32, smooth.data(), n, {}, stored);
  EXPECT_LT(stored.size(), smooth.size() / 2) << p.name(4);
  // Random bytes: no coder pays, every stream raw.
  std::vector<unsigned char> noise(n * 4);
  std::mt19937_64 rng(3);
  for (auto& b : noise) b = uint8_t(rng());
  s = {{noise.data(), n, {}}};
  p = choose(f32, {Predictor::none, Predictor::delta}, s, 1);
  EXPECT_TRUE(p.raw()) << p.name(4);
}

TEST(Codec, FlagLikeColumnsTakeBitPlanes) {
  // A sign in every value (charges of +-1.0) and a 0/1 flag: one bit of entropy each.
  const size_t n = 16384;
  std::mt19937_64 rng(8);
  std::vector<float> q(n);
  for (float& v : q) v = rng() & 1 ? 1.0f : -1.0f;
  std::vector<uint16_t> kind(n);
  for (uint16_t& v : kind) v = uint16_t(rng() % 2);
  const ValueType f32 = value_type(uint8_t(DType::f32)), u16 = value_type(uint8_t(DType::u16));
  Plan p = choose(f32, {Predictor::none, Predictor::delta, Predictor::xor_}, {{q.data(), n, {}}}, 1);
  EXPECT_EQ(p.layout, Layout::bits) << p.name(4);
  EXPECT_NE(p.name(4).find("bitshuffle"), std::string::npos) << p.name(4);
  std::string stored;
  encode(p, f32, q.data(), n, {}, stored);
  Plan told;
  ASSERT_TRUE(describe(stored.data(), stored.size(), told));
  EXPECT_EQ(told.name(4), p.name(4));
  EXPECT_LT(stored.size(), n / 8 + n / 64) << p.name(4);  // about one bit per value
  std::vector<float> back(n);
  ASSERT_EQ(decode(f32, stored.data(), stored.size(), back.data(), n, {}), "");
  EXPECT_EQ(std::memcmp(back.data(), q.data(), n * 4), 0);
  p = choose(u16, {Predictor::none, Predictor::delta, Predictor::offset}, {{kind.data(), n, {}}}, 1);
  EXPECT_EQ(p.layout, Layout::bits) << p.name(2);
  // Smooth floats keep byte planes (bit planes would not pay for their slower decoding).
  auto smooth = values(uint8_t(DType::f32), n, 0, 1);
  p = choose(f32, {Predictor::none, Predictor::delta, Predictor::xor_}, {{smooth.data(), n, {}}}, 1);
  EXPECT_EQ(p.layout, Layout::planes) << p.name(4);
}

TEST(Codec, DamagedBlocksAreRefusedWithAMessage) {
  const size_t n = 2000;
  const ValueType t = value_type(uint8_t(DType::f64));
  const auto in = values(uint8_t(DType::f64), n, 0, 5);
  Plan plan;
  plan.predictor = Predictor::delta;
  plan.layout = Layout::planes;
  plan.coders.assign(8, Coder::zstd);
  std::string good;
  encode(plan, t, in.data(), n, {}, good);
  std::vector<unsigned char> out(in.size());
  auto problem = [&](const std::string& b, size_t values = 2000) {
    return decode(t, b.data(), b.size(), out.data(), values, {});
  };
  EXPECT_EQ(problem(good), "");
  EXPECT_NE(problem(good.substr(0, 3)).find("shorter than its 4-byte header"), std::string::npos);
  EXPECT_NE(problem(good.substr(0, good.size() - 1)).find("past the end"), std::string::npos);
  EXPECT_NE(problem(good + "x").find("trailing"), std::string::npos);
  EXPECT_NE(problem(good, n + 1).find("expected"), std::string::npos);
  std::string b = good;
  b[0] = 9;
  EXPECT_NE(problem(b).find("unknown predictor"), std::string::npos);
  b = good;
  b[kBlockHeaderBytes] = 7;
  EXPECT_NE(problem(b).find("unknown coder"), std::string::npos);
  b = good;
  b[2] = 3;
  EXPECT_NE(problem(b).find("streams"), std::string::npos);
  b = good;
  b[3] = 8;
  EXPECT_NE(problem(b).find("parameter"), std::string::npos);
  // The quantile predictor needs codes.
  plan.predictor = Predictor::quantile;
  Quantiles q = quantiles(uint8_t(DType::f64), in, n);
  encode(plan, t, in.data(), n, {q.codes.data(), q.bases.data()}, b);
  EXPECT_NE(problem(b).find("without quantile codes"), std::string::npos);
  // Bit planes with a bit set past the last value.
  Plan bp;
  bp.layout = Layout::bits;
  bp.coders = {Coder::raw};
  encode(bp, t, in.data(), 1999, {}, b);
  EXPECT_EQ(decode(t, b.data(), b.size(), out.data(), 1999, {}), "");
  const size_t at = kBlockHeaderBytes + kStreamEntryBytes + (1999 + 7) / 8 - 1;  // plane 0's last byte
  b[at] = char(b[at] | 0x80);
  EXPECT_NE(decode(t, b.data(), b.size(), out.data(), 1999, {}).find("past the block's last value"), std::string::npos);
  b[1] = 5;
  EXPECT_NE(decode(t, b.data(), b.size(), out.data(), 1999, {}).find("unknown layout"), std::string::npos);
  // Random bytes after a valid header never crash.
  std::mt19937_64 rng(11);
  for (int k = 0; k < 2000; ++k) {
    std::string r = good;
    for (int j = 0; j < 4; ++j) r[rng() % r.size()] = char(rng());
    r.resize(rng() % (r.size() + 1));
    (void)problem(r);
  }
}

TEST(Codec, GridPredictorsCodeValuesOnTheGridAndKeepEveryBit) {
  for (uint8_t code : {uint8_t(DType::f32), uint8_t(DType::f64)}) {
    const ValueType t = value_type(code);
    const size_t n = 5000;
    auto given = values(code, n, 1, 77);  // noise, with the NaN/inf of shape 3 added below
    dispatch_dtype(DType(code), [&](auto tag) {
      using T = decltype(tag);
      T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
      std::memcpy(given.data() + 3 * t.size, &nan, t.size);
      std::memcpy(given.data() + 9 * t.size, &inf, t.size);
    });
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
      double v = load_as_double(DType(code), given.data(), i);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    const double bound = 0.5;
    const Grid g = make_grid(code, lo, hi, bound, "v");
    std::vector<unsigned char> stored_values(given.size());
    EXPECT_LE(quantize(code, g, given.data(), t.size, n, stored_values.data()), bound);
    const Quantiles q = quantiles(code, stored_values, n);
    for (Predictor pred : {Predictor::grid, Predictor::grid_delta, Predictor::grid_quantile}) {
      Plan plan;
      plan.predictor = pred;
      plan.layout = Layout::planes;
      plan.coders.assign(t.size, Coder::zstd);
      Context ctx{q.codes.data(), q.bases.data(), q.edges.data(), g.origin, g.step};
      std::string block;
      encode(plan, t, stored_values.data(), n, ctx, block);
      Plan used;
      ASSERT_TRUE(describe(block.data(), block.size(), used));
      EXPECT_EQ(used.predictor, pred) << predictor_name(pred);  // on the grid: no fallback to `none`
      EXPECT_EQ(used.layout, Layout::planes);
      Context read{q.codes.data(), q.bases.data(), q.edges.data()};  // grid parameters come from the block
      std::vector<unsigned char> out(stored_values.size());
      ASSERT_EQ(decode(t, block.data(), block.size(), out.data(), n, read), "") << predictor_name(pred);
      ASSERT_EQ(out, stored_values) << predictor_name(pred);
    }
    // Values off the grid are stored exactly (the block falls back to `none`).
    Plan plan;
    plan.predictor = Predictor::grid;
    plan.layout = Layout::planes;
    plan.coders.assign(t.size, Coder::zstd);
    std::string block;
    encode(plan, t, given.data(), n, Context{nullptr, nullptr, nullptr, g.origin, g.step}, block);
    std::vector<unsigned char> out(given.size());
    ASSERT_EQ(decode(t, block.data(), block.size(), out.data(), n, {}), "");
    EXPECT_EQ(out, given);
  }
  EXPECT_THROW(make_grid(uint8_t(DType::f32), 0, 1e6, 1e-3, "x"), UsageError);  // finer than f32 at 1e6
  EXPECT_THROW(make_grid(uint8_t(DType::i32), 0, 10, 1, "k"), UsageError);       // integers: no bounds
}
