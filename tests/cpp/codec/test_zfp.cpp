// Predictor::zfp (codec/zfp.hpp, docs/format.md §4.12): field blocks in HZ order are put in
// their box's lattice order, coded by zfp at a fixed accuracy and put back: round trips stay
// within the tolerance for 1-, 2- and 3-D boxes, f32 and f64, block 0 (hierarchical) and
// blocks of one level; the permutation is the one HzOrder defines; damaged, truncated and
// forged blocks are refused with a message, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/codec/zfp.hpp"
#include "motes/fields/hz.hpp"

using namespace motes;
using namespace motes::codec;

namespace {

const ValueType kF32{4, true, true}, kF64{8, true, true};

std::vector<uint8_t> axis_values(const std::string& digits) {
  std::vector<uint8_t> a;
  for (char c : digits) a.push_back(uint8_t(c - '0'));
  return a;
}

// Box coordinates (x, y, z) of each sample of a block, from its lattice index.
std::vector<std::array<double, 3>> coords(const ZfpBox& box) {
  std::vector<std::array<double, 3>> out(box.lattice.size());
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t l = box.lattice[i];
    out[i] = {double(l % box.dims[0]), double(l / box.dims[0] % box.dims[1]), double(l / box.dims[0] / box.dims[1])};
  }
  return out;
}

// Values of a block: smooth in the box's coordinates (shape 0), uniform noise (1), or
// linear in x (2).
template <class F>
std::vector<F> block_values(const ZfpBox& box, int shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<F> v(box.lattice.size());
  const auto c = coords(box);
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& [x, y, z] = c[i];
    const double s = shape == 0   ? std::sin(0.07 * x) * std::cos(0.05 * y) + 0.01 * z + 3
                     : shape == 1 ? u(rng)
                                  : 0.5 * x - 4;
    v[i] = F(s);
  }
  return v;
}

std::string encode_block(ValueType t, const void* src, size_t n, bool hierarchical, const std::string& digits,
                         double tol) {
  Context ctx;
  ctx.zfp_tolerance = tol;
  ctx.zfp_hierarchical = hierarchical;
  ctx.zfp_axes = digits;
  std::string out, why;
  EXPECT_TRUE(encode_zfp(t, src, n, ctx, out, &why)) << why;
  // codec::encode with the zfp plan gives the same bytes.
  Plan plan;
  plan.predictor = Predictor::zfp;
  std::string again;
  encode(plan, t, src, n, ctx, again);
  EXPECT_EQ(out, again);
  return out;
}

template <class F>
void round_trip(const std::string& digits, bool hierarchical, int shape, double tol, uint64_t seed) {
  const ValueType t = sizeof(F) == 8 ? kF64 : kF32;
  ZfpBox box;
  ASSERT_TRUE(zfp_box(hierarchical, axis_values(digits), box));
  const size_t n = box.lattice.size();
  const std::vector<F> v = block_values<F>(box, shape, seed);
  const std::string block = encode_block(t, v.data(), n, hierarchical, digits, tol);
  Plan plan;
  ASSERT_TRUE(describe(block.data(), block.size(), plan));
  EXPECT_EQ(plan.predictor, Predictor::zfp);
  EXPECT_EQ(plan.name(t.size), "zfp");
  std::vector<F> out(n);
  ASSERT_EQ(decode(t, block.data(), block.size(), out.data(), n, {}), "") << digits;
  const double err = max_abs_error(t, v.data(), out.data(), n);
  EXPECT_LE(err, tol) << "axes " << digits << (hierarchical ? " hierarchical" : "") << " shape " << shape;
  if (shape == 0) {
    EXPECT_LT(block.size(), n * sizeof(F)) << digits;  // smooth data shrinks
  }
}

// Axis sequences of `bits` digits: 1-D, 2-D and 3-D bitmask-like ones and random ones.
std::vector<std::string> sequences(int bits, uint64_t seed) {
  std::vector<std::string> out;
  std::string one(size_t(bits), '0'), two, three, yx;
  for (int k = 0; k < bits; ++k) {
    two += char('0' + k % 2);
    three += char('0' + (k % 3));
    yx += k < bits / 2 ? '2' : char('0' + k % 2);
  }
  out = {one, two, three, yx};
  std::mt19937_64 rng(seed);
  std::string r;
  for (int k = 0; k < bits; ++k) r += char('0' + rng() % 3);
  out.push_back(r);
  return out;
}

}  // namespace

TEST(Zfp, RoundTripsWithinToleranceForEveryBoxShape) {
  for (int bits : {6, 7, 9, 12, 14, 17}) {
    for (const std::string& digits : sequences(bits, uint64_t(bits))) {
      for (bool hierarchical : {false, true}) {
        const int shapes = bits <= 12 ? 2 : 1;  // noise on the smaller blocks (keeps the test quick)
        for (int shape = 0; shape < shapes; ++shape) {
          round_trip<double>(digits, hierarchical, shape, 1e-6, 1);
          round_trip<float>(digits, hierarchical, shape, 1e-3, 2);
        }
      }
    }
  }
}

TEST(Zfp, ToleranceControlsTheSize) {
  ZfpBox box;
  const std::string digits = "012012012012";
  ASSERT_TRUE(zfp_box(false, axis_values(digits), box));
  const auto v = block_values<double>(box, 0, 3);
  size_t last = 0;
  for (double tol : {1e-1, 1e-4, 1e-8, 1e-12}) {
    const std::string b = encode_block(kF64, v.data(), v.size(), false, digits, tol);
    std::vector<double> out(v.size());
    ASSERT_EQ(decode(kF64, b.data(), b.size(), out.data(), out.size(), {}), "");
    EXPECT_LE(max_abs_error(kF64, v.data(), out.data(), v.size()), tol);
    EXPECT_GT(b.size(), last);  // tighter tolerance, more bytes
    last = b.size();
  }
}

// The permutation is HzOrder's: for every block of real fields, the box that
// zfp_block_context and zfp_box give puts each sample where its grid point lies in the
// block's lattice box (fields::block_lattice).
TEST(Zfp, PermutationIsTheBlockLatticeOfHzOrder) {
  for (fields::Dims dims : {fields::Dims{1 << 9, 1, 1}, fields::Dims{32, 16, 1}, fields::Dims{16, 8, 8},
                            fields::Dims{5, 3, 1}, fields::Dims{64, 8, 32}, fields::Dims{1, 1, 1}}) {
    const int ndim = dims[2] > 1 ? 3 : dims[1] > 1 ? 2 : 1;
    const fields::Bitmask bm = fields::Bitmask::guess(dims, ndim);
    const fields::HzOrder order(bm);
    const std::string text = bm.text();
    for (int block_bits : {6, 8}) {
      const int bits = std::min(block_bits, order.maxh());
      const uint64_t per = uint64_t(1) << bits, blocks = order.size() / per;
      for (uint64_t b = 0; b < blocks; ++b) {
        Context ctx;
        ASSERT_TRUE(zfp_block_context(text, block_bits, b, ctx));
        EXPECT_EQ(ctx.zfp_hierarchical, b == 0);
        ASSERT_EQ(ctx.zfp_axes.size(), size_t(bits));
        ZfpBox box;
        ASSERT_TRUE(zfp_box(ctx.zfp_hierarchical, axis_values(std::string(ctx.zfp_axes)), box));
        const fields::BlockLattice lat = fields::block_lattice(order, bits, b);
        for (int a = 0; a < 3; ++a) ASSERT_EQ(box.dims[size_t(a)], lat.count[size_t(a)]) << text << " block " << b;
        for (uint64_t i = 0; i < per; ++i) {
          const fields::Dims p = order.point_of_hz(b * per + i);
          uint64_t c[3];
          for (int a = 0; a < 3; ++a) c[a] = (p[size_t(a)] - lat.first[size_t(a)]) >> lat.step_bits[size_t(a)];
          ASSERT_EQ(box.lattice[i], c[0] + lat.count[0] * (c[1] + lat.count[1] * c[2]))
              << text << " block " << b << " sample " << i;
        }
      }
      Context past;
      EXPECT_FALSE(zfp_block_context(text, block_bits, blocks, past));  // past the last block
    }
  }
  Context ctx;
  EXPECT_FALSE(zfp_block_context("0120", 6, 0, ctx));
  EXPECT_FALSE(zfp_block_context("V0130", 2, 0, ctx));
}

TEST(Zfp, PermutationMakesLatticeFieldsCompress) {
  // Exact round trip of the permutation: integers with a tiny tolerance come back exactly.
  for (bool hierarchical : {false, true}) {
    const std::string digits = "2101201201201";
    ZfpBox box;
    ASSERT_TRUE(zfp_box(hierarchical, axis_values(digits), box));
    std::vector<double> v(box.lattice.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(box.lattice[i]);  // the lattice index itself
    const std::string b = encode_block(kF64, v.data(), v.size(), hierarchical, digits, 1e-9);
    std::vector<double> out(v.size());
    ASSERT_EQ(decode(kF64, b.data(), b.size(), out.data(), out.size(), {}), "");
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(std::nearbyint(out[i]), v[i]) << i;
    EXPECT_LE(max_abs_error(kF64, v.data(), out.data(), v.size()), 1e-9);
  }
  // A field linear in x takes far fewer bytes than noise of the same range, and far fewer
  // than the same samples described as a 1-D run in HZ order (no permutation).
  for (bool hierarchical : {false, true}) {
    const std::string digits = "012012012012012";
    ZfpBox box;
    ASSERT_TRUE(zfp_box(hierarchical, axis_values(digits), box));
    const auto linear = block_values<double>(box, 2, 4);
    auto noise = block_values<double>(box, 1, 5);
    for (double& x : noise) x = (x + 1) * 0.5 * double(box.dims[0]) * 0.5 - 4;  // the same range
    const size_t n = linear.size();
    const size_t lin = encode_block(kF64, linear.data(), n, hierarchical, digits, 1e-6).size();
    const size_t noisy = encode_block(kF64, noise.data(), n, hierarchical, digits, 1e-6).size();
    const size_t flat = encode_block(kF64, linear.data(), n, false, std::string(digits.size(), '0'), 1e-6).size();
    EXPECT_LT(lin * 8, noisy) << lin << " vs " << noisy;
    EXPECT_LT(lin * 2, flat) << lin << " vs " << flat;
  }
}

TEST(Zfp, EncodeRefusesWhatItCannotCode) {
  const std::string digits = "010101";
  Context ctx;
  ctx.zfp_tolerance = 1e-3;
  ctx.zfp_axes = digits;
  std::vector<double> v(64, 1.5);
  std::string out = "untouched", why;
  v[10] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(encode_zfp(kF64, v.data(), 64, ctx, out, &why));
  EXPECT_NE(why.find("NaN"), std::string::npos);
  EXPECT_EQ(out, "untouched");
  v[10] = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(encode_zfp(kF64, v.data(), 64, ctx, out, &why));
  v[10] = 2;
  EXPECT_FALSE(encode_zfp(ValueType{8, false, true}, v.data(), 64, ctx, out, &why));
  EXPECT_FALSE(encode_zfp(kF64, v.data(), 32, ctx, out, &why));  // 6 digits for 32 values
  for (double tol : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Context c = ctx;
    c.zfp_tolerance = tol;
    EXPECT_FALSE(encode_zfp(kF64, v.data(), 64, c, out, &why)) << tol;
  }
  Context bad = ctx;
  bad.zfp_axes = "010131";
  EXPECT_FALSE(encode_zfp(kF64, v.data(), 64, bad, out, &why));
  EXPECT_EQ(out, "untouched");
  // codec::encode keeps such a block exact (predictor none).
  v[3] = std::numeric_limits<double>::quiet_NaN();
  Plan plan;
  plan.predictor = Predictor::zfp;
  plan.coders = {Coder::zstd};
  encode(plan, kF64, v.data(), 64, ctx, out);
  EXPECT_EQ(out[0], char(Predictor::none));
  std::vector<double> back(64);
  ASSERT_EQ(decode(kF64, out.data(), out.size(), back.data(), 64, {}), "");
  EXPECT_EQ(std::memcmp(back.data(), v.data(), sizeof(double) * 64), 0);
  // max_abs_error: +inf for NaN or infinities.
  EXPECT_EQ(max_abs_error(kF64, v.data(), back.data(), 64), std::numeric_limits<double>::infinity());
  std::vector<float> a{1, 2, 3}, b{1, 2.5f, 2};
  EXPECT_EQ(max_abs_error(kF32, a.data(), b.data(), 3), 1.0);
}

TEST(Zfp, DamagedBlocksAreRefused) {
  const std::string digits = "0120120120";  // 1024 values
  ZfpBox box;
  ASSERT_TRUE(zfp_box(true, axis_values(digits), box));
  const auto v = block_values<float>(box, 0, 6);
  const size_t n = v.size();
  const std::string good = encode_block(kF32, v.data(), n, true, digits, 1e-4);
  std::vector<float> out(n);
  auto problem = [&](const std::string& b, size_t values = 1024, ValueType t = kF32) {
    std::vector<unsigned char> dst(values * t.size + 8);
    return decode(t, b.data(), b.size(), dst.data(), values, {});
  };
  ASSERT_EQ(problem(good), "");
  const size_t param = kBlockHeaderBytes + kStreamEntryBytes;
  auto with = [&](size_t at, unsigned char byte) {
    std::string b = good;
    b[at] = char(byte);
    return problem(b);
  };
  EXPECT_NE(with(1, 1).find("layout"), std::string::npos);
  EXPECT_NE(with(2, 2).find("streams"), std::string::npos);
  EXPECT_NE(with(3, 11).find("parameter"), std::string::npos);
  EXPECT_NE(with(kBlockHeaderBytes, 1).find("coder"), std::string::npos);
  EXPECT_NE(with(kBlockHeaderBytes + 2, 1).find("reserved"), std::string::npos);
  EXPECT_NE(with(param, 2).find("flags"), std::string::npos);
  EXPECT_NE(with(param + 1, 21).find("bits"), std::string::npos);
  EXPECT_NE(with(param + 1, 9).find("parameter"), std::string::npos);
  EXPECT_NE(with(param + kZfpFixedParamBytes + 3, 3).find("axis"), std::string::npos);
  for (double tol : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    std::string b = good;
    std::memcpy(b.data() + param + 2, &tol, 8);
    EXPECT_NE(problem(b).find("tolerance"), std::string::npos) << tol;
  }
  EXPECT_NE(problem(good, 512).find("expected"), std::string::npos);
  EXPECT_NE(problem(good, 1024, ValueType{4, false, true}).find("f32"), std::string::npos);
  EXPECT_NE(problem(good + "12345678").find("trailing"), std::string::npos);
  auto with_stream = [&](const std::string& stream) {  // good's header and parameter, another stream
    std::string b = good.substr(0, param + kZfpFixedParamBytes + digits.size()) + stream;
    const uint32_t len = uint32_t(stream.size());
    std::memcpy(b.data() + kBlockHeaderBytes + 4, &len, 4);
    return b;
  };
  const std::string stream = good.substr(param + kZfpFixedParamBytes + digits.size());
  ASSERT_FALSE(stream.empty());
  EXPECT_NE(stream.back(), '\0');  // the writer drops trailing zero bytes
  EXPECT_NE(problem(with_stream(stream + std::string(1, '\0'))).find("zero byte"), std::string::npos);
  EXPECT_NE(problem(with_stream(stream + std::string(40, '\x5a'))).find("past its last block"), std::string::npos);
  // A stream cut short decodes (zeros past its end): a value error, not a crash.
  EXPECT_EQ(problem(with_stream(stream.substr(0, stream.size() / 2))), "");
  // Every truncation is refused.
  for (size_t cut = 0; cut < good.size(); ++cut) EXPECT_NE(problem(good.substr(0, cut)), "") << cut;
  // Flipped bits anywhere and garbage streams: an error or values, never a crash (the
  // fuzzer, tests/fuzz/fuzz_codec.cpp, runs this under AddressSanitizer).
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string b = good;
    const int flips = 1 + int(rng() % 8);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] ^= char(1 << (rng() % 8));
    (void)problem(b);
  }
  for (int trial = 0; trial < 500; ++trial) {
    std::string garbage(1 + rng() % 2000, '\0');
    for (char& c : garbage) c = char(rng());
    const std::string p = problem(with_stream(garbage));
    EXPECT_TRUE(p.empty() || p.find("zfp") != std::string::npos) << p;
  }
  // An all-zero block codes to an empty stream.
  std::vector<float> zeros(n, 0.0f);
  const std::string empty = encode_block(kF32, zeros.data(), n, true, digits, 1e-4);
  EXPECT_EQ(empty.size(), param + kZfpFixedParamBytes + digits.size());
  std::vector<float> back(n, 1.0f);
  ASSERT_EQ(decode(kF32, empty.data(), empty.size(), back.data(), n, {}), "");
  EXPECT_EQ(back, zeros);
}
