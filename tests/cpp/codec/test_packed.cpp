// Packed words (Layout::packed, docs/format.md §4.12.2): every unit mode round-trips every
// dtype bit for bit, each value read where it lies equals the decoded block, the writer's
// choice follows the sizes, and damaged streams are refused with a message, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "motes/codec/codec.hpp"
#include "motes/codec/kernels.hpp"
#include "motes/codec/packed.hpp"
#include "motes/codec/words.hpp"
#include "motes/core/bytes.hpp"
#include "motes/core/types.hpp"
#include "codec_values.hpp"

using namespace motes;
using namespace motes::codec;

namespace {

std::vector<unsigned char> values(uint8_t code, size_t n, int shape, uint64_t seed) {
  return test::codec_values(code, n, shape, seed);  // shapes: codec_values.hpp
}

std::string packed_block(ValueType t, Predictor pred, const std::vector<unsigned char>& in, size_t n, const Context& ctx = {},
                         Layout layout = Layout::packed) {
  Plan plan;
  plan.predictor = pred;
  plan.layout = layout;
  plan.coders = {Coder::raw};
  std::string stored;
  encode(plan, t, in.data(), n, ctx, stored);
  return stored;
}

}  // namespace

TEST(Packed, EveryShapeRoundTripsAndEveryValueIsReadWhereItLies) {
  int checked = 0;
  for (uint8_t code = 1; dtype_valid(code); ++code) {
    const ValueType t = value_type(code);
    for (int shape = 0; shape < 8; ++shape) {
      for (size_t n : {1u, 17u, 255u, 256u, 257u, 1000u, 4096u}) {
        const auto in = values(code, n, shape, code * 100 + shape + n);
        for (Predictor pred : {Predictor::none, Predictor::offset}) {
          const std::string stored = packed_block(t, pred, in, n);
          ASSERT_EQ(stored[1], char(Layout::packed));
          std::vector<unsigned char> out(in.size(), 0xAA);
          ASSERT_EQ(decode(t, stored.data(), stored.size(), out.data(), n, {}), "")
              << dtype_name(DType(code)) << " shape " << shape << " n " << n;
          ASSERT_EQ(out, in) << dtype_name(DType(code)) << " shape " << shape << " n " << n << " " << predictor_name(pred);
          AddressableBlock view;
          std::string problem;
          ASSERT_TRUE(view.open(t, stored.data(), stored.size(), n, problem)) << problem;
          unsigned char v[8];
          for (size_t i = 0; i < n; ++i) {
            ASSERT_TRUE(view.value(i, nullptr, nullptr, v));
            ASSERT_EQ(std::memcmp(v, in.data() + i * t.size, t.size), 0) << dtype_name(DType(code)) << " shape " << shape << " value " << i;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1100);
}

TEST(Packed, EveryUnitSizeRoundTripsAndTheSmallestIsTaken) {
  // Units of 1024 and 4096 words (the id index's choice, Context::packed_unit = 0): the same
  // values, read whole and one by one; the smallest of the three sizes is what is stored.
  for (uint8_t code : {uint8_t(DType::u32), uint8_t(DType::u64), uint8_t(DType::f32)}) {
    const ValueType t = value_type(code);
    for (int shape = 0; shape < 8; ++shape) {
      for (size_t n : {1u, 300u, 1024u, 1500u, 4096u}) {
        const auto in = values(code, n, shape, code * 7 + shape + n);
        size_t smallest = SIZE_MAX;
        for (uint32_t unit : {kPackedUnit, 1024u, 4096u}) {
          Context ctx;
          ctx.packed_unit = unit;
          const std::string stored = packed_block(t, Predictor::offset, in, n, ctx);
          smallest = std::min(smallest, stored.size());
          std::vector<unsigned char> out(in.size(), 0xAA);
          ASSERT_EQ(decode(t, stored.data(), stored.size(), out.data(), n, {}), "") << "unit " << unit;
          ASSERT_EQ(out, in) << "unit " << unit << " shape " << shape << " n " << n;
          AddressableBlock view;
          std::string problem;
          ASSERT_TRUE(view.open(t, stored.data(), stored.size(), n, problem)) << problem;
          unsigned char v[8];
          for (size_t i = 0; i < n; i += 37) {
            ASSERT_TRUE(view.value(i, nullptr, nullptr, v));
            ASSERT_EQ(std::memcmp(v, in.data() + i * t.size, t.size), 0) << "unit " << unit << " value " << i;
          }
        }
        Context best;
        best.packed_unit = 0;
        EXPECT_EQ(packed_block(t, Predictor::offset, in, n, best).size(), smallest) << "shape " << shape << " n " << n;
      }
    }
  }
  // A run of consecutive keys is one linear unit of 4096 with no bits per key.
  std::vector<unsigned char> keys(4096 * 8);
  for (uint64_t i = 0; i < 4096; ++i) {
    const uint64_t k = 1000 + i;
    std::memcpy(keys.data() + i * 8, &k, 8);
  }
  Context best;
  best.packed_unit = 0;
  EXPECT_LE(packed_block(value_type(uint8_t(DType::u64)), Predictor::offset, keys, 4096, best).size(), 64u);
}

TEST(Packed, QuantileResidualsPackedOrBinnedAreReadWithTheirCodes) {
  const ValueType t = value_type(uint8_t(DType::f32));
  const size_t n = 4096;
  const auto in = values(uint8_t(DType::f32), n, 1, 3);
  std::vector<double> edges(257);
  for (size_t k = 0; k <= 256; ++k) edges[k] = -4000.0 + 8000.0 * double(k) / 256;
  const std::vector<uint64_t> bases = quantile_bases(uint8_t(DType::f32), edges.data());
  std::vector<uint8_t> codes(n);
  for (size_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, in.data() + 4 * i, 4);
    uint32_t c = 0;
    for (uint32_t k = 1; k < 256; ++k) c += edges[k] <= x;
    codes[i] = uint8_t(c);
  }
  const Context ctx{codes.data(), bases.data()};
  size_t sizes[2] = {};
  for (Layout layout : {Layout::packed, Layout::binned}) {
    const std::string stored = packed_block(t, Predictor::quantile, in, n, ctx, layout);
    ASSERT_EQ(stored[0], char(Predictor::quantile));
    ASSERT_EQ(stored[1], char(layout));
    sizes[layout == Layout::binned] = stored.size();
    std::vector<unsigned char> out(in.size());
    ASSERT_EQ(decode(t, stored.data(), stored.size(), out.data(), n, ctx), "");
    EXPECT_EQ(out, in);
    AddressableBlock view;
    std::string problem;
    ASSERT_TRUE(view.open(t, stored.data(), stored.size(), n, problem)) << problem;
    ASSERT_TRUE(view.needs_codes());
    for (size_t i = 0; i < n; i += 7) {
      unsigned char v[4];
      ASSERT_TRUE(view.value(i, codes.data(), bases.data(), v));
      ASSERT_EQ(std::memcmp(v, in.data() + 4 * i, 4), 0) << i;
    }
    if (layout == Layout::binned) {  // damaged: refused with a message naming what is wrong
      std::string b = stored;
      const size_t s0 = kBlockHeaderBytes + kStreamEntryBytes;
      b[s0 + 4 + codes[0]] = 40;  // a 40-bit bin of 32-bit words
      EXPECT_NE(decode(t, b.data(), b.size(), out.data(), n, ctx).find("bits"), std::string::npos);
      b = stored;
      b[s0 + 260 + 4] = char(b[s0 + 260 + 4] + 1);  // unit 1 a bit late
      EXPECT_NE(decode(t, b.data(), b.size(), out.data(), n, ctx).find("does not start"), std::string::npos);
      b = stored;
      b[b.size() - 1] = 1;
      EXPECT_NE(decode(t, b.data(), b.size(), out.data(), n, ctx).find("padding"), std::string::npos);
      EXPECT_NE(decode(t, stored.data(), stored.size(), out.data(), n, {}).find("without quantile codes"), std::string::npos);
      std::mt19937_64 rng(8);
      for (int k = 0; k < 2000; ++k) {  // random damage: refused or decoded, never a crash
        std::string r = stored;
        for (int j = 0; j < 3; ++j) r[rng() % r.size()] = char(rng());
        if (k % 3 == 0) r.resize(rng() % (r.size() + 1));
        (void)decode(t, r.data(), r.size(), out.data(), n, ctx);
        AddressableBlock v;
        std::string w;
        if (v.open(t, r.data(), r.size(), n, w))
          for (size_t i = 0; i < n; i += 31) {
            unsigned char x[4];
            (void)v.value(i, codes.data(), bases.data(), x);
          }
      }
    }
  }
  // Residuals in their bins' widths: smaller than frames of reference over every bin.
  EXPECT_LT(sizes[1], sizes[0]);
}

TEST(Packed, UnitsTakeTheSmallestForm) {
  const ValueType t = value_type(uint8_t(DType::f32));
  const size_t n = 4096;
  auto stream_bytes = [&](int shape) {
    const auto in = values(uint8_t(DType::f32), n, shape, 9);
    return packed_block(t, Predictor::offset, in, n).size();
  };
  const size_t overhead = kBlockHeaderBytes + kStreamEntryBytes + 4 + 4 + 16 * kPackedUnitEntryBytes + kPackedPadBytes;
  EXPECT_EQ(stream_bytes(2), overhead + 16 * 4);                       // constant: a reference, no bits
  EXPECT_LE(stream_bytes(4), overhead + 16 * (2 * 4 + 256 / 8));       // two values: 1-bit indexes
  EXPECT_LT(stream_bytes(5), overhead + 16 * (64 * 4 + 256 * 6 / 8));  // a few dozen: at most 6-bit indexes
  // Noise crossing zero: the high parts (sign, exponent) as a dictionary beat 32-bit offsets.
  EXPECT_LT(stream_bytes(1), size_t(n) * 4 * 95 / 100);
  // Consecutive integers (sorted ids): linear units of no bits, a reference and a step each.
  const ValueType i32 = value_type(uint8_t(DType::i32));
  const auto ramp = values(uint8_t(DType::i32), n, 6, 9);
  EXPECT_EQ(packed_block(i32, Predictor::offset, ramp, n).size(), overhead + 16 * 2 * 4);
  const auto gaps = values(uint8_t(DType::i32), n, 7, 9);  // steps of 1-5: offsets of a few bits from the line
  EXPECT_LT(packed_block(i32, Predictor::offset, gaps, n).size(), overhead + 16 * (2 * 4 + 256 * 4 / 8));
}

TEST(Packed, TheWriterChoosesPackedWordsOnlyWhenAskedAndWhenTheyCostLittle) {
  const ValueType t = value_type(uint8_t(DType::f32));
  const size_t n = 4096;
  // Positions within a treelet: uniform in [50, 51), as the layout leaves them.
  std::mt19937_64 rng(1);
  std::vector<float> smooth(n);
  for (float& x : smooth) x = 50.0f + float(double(rng() >> 11) * 0x1.0p-53);
  std::vector<Sample> samples{{smooth.data(), n, {}}};
  const std::vector<Predictor> preds{Predictor::none, Predictor::delta, Predictor::xor_};
  EXPECT_NE(choose(t, preds, samples, 1).layout, Layout::packed);
  EXPECT_EQ(choose(t, preds, samples, 1, true).layout, Layout::packed);
  // A column zstd shrinks far below any bit-packing (a long run of one value, then a ramp)
  // keeps its byte planes.
  std::vector<float> runs(n);
  for (size_t i = 0; i < n; ++i) runs[i] = i < n / 2 ? 1.0f : float(i % 3 == 0 ? 1e6 + double(i) * 1e-3 : 2.5);
  std::vector<Sample> rs{{runs.data(), n, {}}};
  const Plan p = choose(t, preds, rs, 1, true);
  std::string a, b;
  encode(p, t, runs.data(), n, {}, a);
  Plan packed = p;
  packed.predictor = Predictor::offset, packed.layout = Layout::packed, packed.coders = {Coder::raw};
  encode(packed, t, runs.data(), n, {}, b);
  if (p.layout != Layout::packed) EXPECT_GT(double(b.size()), double(a.size()) * (1 + kPackedSlack));
}

TEST(Packed, DamagedStreamsAreRefusedWithAMessage) {
  const ValueType t = value_type(uint8_t(DType::f32));
  const size_t n = 1000;
  std::vector<unsigned char> in = values(uint8_t(DType::f32), n, 4, 4);  // dictionary units
  const std::vector<unsigned char> smooth = values(uint8_t(DType::f32), n, 0, 4);
  in.insert(in.end(), smooth.begin(), smooth.begin() + 4 * 500);       // and frame-of-reference ones
  const size_t m = n + 500;
  const std::string good = packed_block(t, Predictor::offset, in, m);
  std::vector<unsigned char> out(in.size());
  auto problem = [&](const std::string& b) { return decode(t, b.data(), b.size(), out.data(), m, {}); };
  ASSERT_EQ(problem(good), "");
  const size_t s0 = kBlockHeaderBytes + kStreamEntryBytes + 4;  // the stream; its unit table at s0 + 4
  std::string b = good;
  b[kBlockHeaderBytes] = char(Coder::zstd);
  EXPECT_NE(problem(b).find("not stored raw"), std::string::npos);
  b = good;
  b[s0] = 3;  // unit of 3 words
  EXPECT_NE(problem(b).find("unit of"), std::string::npos);
  b = good;
  b[s0 + 4] = char(b[s0 + 4] + 1);  // unit 0 starts a byte late
  EXPECT_NE(problem(b).find("does not start"), std::string::npos);
  b = good;
  b[s0 + 4 + 5] = 7;  // unknown mode
  EXPECT_NE(problem(b).find("unknown mode"), std::string::npos);
  b = good;
  b[s0 + 4 + 4] = 40;  // a 40-bit offset of 32-bit words
  EXPECT_FALSE(problem(b).empty());
  b = good;
  b[b.size() - 1] = 1;  // padding
  EXPECT_NE(problem(b).find("padding"), std::string::npos);
  EXPECT_FALSE(problem(good.substr(0, good.size() - 1)).empty());
  EXPECT_FALSE(problem(good + std::string(1, '\0')).empty());
  // Unit 0 holds 2 words in 1-bit fields: claiming 1 word moves every unit after it.
  b = good;
  ASSERT_EQ(b[s0 + 4 + 5], 1);
  b[s0 + 4 + 6] = 0;
  EXPECT_FALSE(problem(b).empty());
  AddressableBlock view;
  std::string why;
  EXPECT_FALSE(view.open(t, b.data(), b.size() - 1, m, why));
  EXPECT_FALSE(why.empty());
  // Random damage never crashes, and never reads outside the block.
  std::mt19937_64 rng(5);
  for (int k = 0; k < 3000; ++k) {
    std::string r = good;
    for (int j = 0; j < 3; ++j) r[rng() % r.size()] = char(rng());
    if (k % 3 == 0) r.resize(rng() % (r.size() + 1));
    (void)problem(r);
    AddressableBlock v;
    std::string w;
    if (v.open(t, r.data(), r.size(), m, w)) {
      unsigned char x[4];
      for (size_t i = 0; i < m; i += 37) (void)v.value(i, nullptr, nullptr, x);
    }
  }
}

// The unpacking kernels compiled for any x86-64 and for x86-64-v3 (kernels.hpp) give the same
// words, and the words packed: frames of reference of every word size and width, plain
// dictionaries, binned words of every word size with bases and the quantile predictor's map.
TEST(Packed, BothInstructionSetsUnpackTheSameWords) {
  using kernels::Isa;
  std::mt19937_64 rng(11);
  for (uint32_t size : {1u, 2u, 4u, 8u}) {
    const uint64_t word_mask = size == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * size)) - 1;
    for (uint32_t w = 0; w <= 8 * size; ++w) {
      for (size_t m : {1u, 7u, 8u, 9u, 24u, 100u, 255u, 256u}) {
        std::vector<uint64_t> f(m);
        std::vector<unsigned char> bits((m * w + 7) / 8 + kPackedPadBytes, 0);
        for (size_t j = 0; j < m; ++j) {
          f[j] = w == 64 ? rng() : rng() & ((uint64_t(1) << w) - 1);
          for (uint32_t b = 0; b < w; ++b)
            if (f[j] >> b & 1) bits[(j * w + b) / 8] |= uint8_t(1u << ((j * w + b) % 8));
        }
        const uint64_t ref = rng();
        // Words as they are, and through the float, signed and unsigned types' unordered().
        for (DType dt : {DType::u8, DType::f32, DType::i16}) {
          const WordMap map = dt == DType::u8 ? WordMap{} : words::unorder_map(value_type(uint8_t(dt)));
          auto mapped = [&](uint64_t v) {
            v &= word_mask;
            return (v ^ (((v >> (8 * size - 1) & 1) ? 0 : map.when_clear) | map.always)) & word_mask;
          };
          std::vector<unsigned char> a(m * size), b(m * size);
          kernels::for_unpacker(size, w, Isa::plain)(bits.data(), m, ref, map, a.data());
          kernels::for_unpacker(size, w, Isa::v3)(bits.data(), m, ref, map, b.data());
          ASSERT_EQ(a, b) << size << " " << w << " " << m;
          for (size_t j = 0; j < m; ++j) {
            uint64_t v = 0;
            std::memcpy(&v, a.data() + j * size, size);
            ASSERT_EQ(v, mapped(ref + f[j])) << size << " " << w << " " << j;
          }
          // The same fields as dictionary indexes in their high w - r <= 8 bits and r low bits,
          // of d words (d = 2^(w - r), then fewer: a field past it is refused); indexes of 8
          // bits (a gather), of 3 and 1 (a permute: the sign and exponent of floats that cross
          // zero, whose fields of 28 and 29 bits take a fifth byte for some shifts).
          for (uint32_t r : {0u, w > 8 ? w - 8 : w / 2, w > 3 ? w - 3 : 0u, w > 1 ? w - 1 : 0u}) {
            if (w - r > 8) continue;
            for (uint32_t d : {1u << (w - r), std::max(1u, (1u << (w - r)) - 1)}) {
              std::vector<unsigned char> dict(d * size);
              for (auto& x : dict) x = uint8_t(rng());
              bool past = false;
              for (size_t j = 0; j < m; ++j) past |= (f[j] >> r) >= d;
              ASSERT_EQ(kernels::dict_unpacker(size, w, Isa::plain)(bits.data(), m, dict.data(), d, r, ref, map, a.data()), !past);
              ASSERT_EQ(kernels::dict_unpacker(size, w, Isa::v3)(bits.data(), m, dict.data(), d, r, ref, map, b.data()), !past);
              if (past) continue;
              ASSERT_EQ(a, b) << size << " " << w << " " << m << " dictionary";
              for (size_t j = 0; j < m; ++j) {
                uint64_t word = 0, v = 0;
                std::memcpy(&word, dict.data() + (f[j] >> r) * size, size);
                std::memcpy(&v, a.data() + j * size, size);
                const uint64_t low = r ? f[j] & ((uint64_t(1) << r) - 1) : 0;
                ASSERT_EQ(v, mapped(((r < 64 ? word << r : 0) | low) + ref)) << size << " " << w << " " << r << " " << j;
              }
            }
          }
        }
      }
    }
    for (int trial = 0; trial < 20; ++trial) {
      const size_t n = trial % 2 ? 4096 : 1 + rng() % 3000;
      std::vector<uint8_t> codes(n);
      uint8_t width[256];
      for (auto& x : width) x = uint8_t(rng() % (8 * size + 1));
      std::vector<unsigned char> words(n * size);
      for (size_t i = 0; i < n; ++i) {
        codes[i] = uint8_t(rng() % (trial % 3 ? 256 : 4));
        const uint32_t cw = width[codes[i]];
        const uint64_t v = cw == 0 ? 0 : cw == 64 ? rng() : rng() & ((uint64_t(1) << cw) - 1);
        std::memcpy(words.data() + i * size, &v, size);
      }
      std::string s;
      pack_binned(words.data(), codes.data(), n, size, s);
      const auto* p = reinterpret_cast<const unsigned char*>(s.data());
      const size_t fields = 260 + 4 * ((n + load<uint32_t>(p) - 1) / load<uint32_t>(p));
      const uint64_t bit_count = uint64_t(s.size() - fields - kPackedPadBytes) * 8;
      std::vector<uint64_t> bases(256);
      for (auto& x : bases) x = rng();
      ValueType t = value_type(uint8_t(size == 4 ? DType::f32 : size == 8 ? DType::f64 : size == 2 ? DType::i16 : DType::u8));
      const WordMap map = words::unorder_map(t);
      std::vector<unsigned char> a(n * size), b(n * size);
      const uint32_t shift = uint32_t(__builtin_ctz(load<uint32_t>(p)));
      ASSERT_EQ(kernels::bins_unpacker(size, Isa::plain)(p + 4, p + 260, shift, codes.data(), p + fields, bit_count, n,
                                                          bases.data(), map, a.data()), "");
      ASSERT_EQ(kernels::bins_unpacker(size, Isa::v3)(p + 4, p + 260, shift, codes.data(), p + fields, bit_count, n,
                                                       bases.data(), map, b.data()), "");
      ASSERT_EQ(a, b) << size << " " << trial;
      words::with_word(size, [&](auto z) {  // word i + its base, then the type's unordered()
        using U = decltype(z);
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(load<U>(a.data() + i * size),
                    words::unordered<U>(U(load<U>(words.data() + i * size) + U(bases[codes[i]])), t)) << i;
      });
    }
  }
}
