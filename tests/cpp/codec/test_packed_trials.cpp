// The dictionary trials of packed units (packed.hpp): which trials a unit makes changes the
// bytes a writer stores, never how they read; the trials that store no unit of a column
// change no byte when left out; a large column makes only the trials its samples took.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/codec/packed.hpp"
#include "motes/codec/predictors.hpp"
#include "motes/core/types.hpp"
#include "codec_values.hpp"

using namespace motes;
using namespace motes::codec;

namespace {

std::string encoded(ValueType t, const std::vector<unsigned char>& in, size_t n, uint8_t trials, uint32_t unit = kPackedUnit) {
  Plan plan;
  plan.predictor = Predictor::none;
  plan.layout = Layout::packed;
  plan.coders = {Coder::raw};
  plan.packed_trials = trials;
  Context ctx;
  ctx.packed_unit = unit;
  std::string stored;
  encode(plan, t, in.data(), n, ctx, stored);
  return stored;
}

}  // namespace

TEST(PackedTrials, AnyTrialSetDecodesExactly) {
  const size_t n = 3000;
  for (uint8_t code = 1; dtype_valid(code); ++code) {
    const ValueType t = value_type(code);
    for (int shape = 0; shape < 8; ++shape) {
      const auto in = test::codec_values(code, n, shape, 31 * code + shape);
      for (uint8_t trials : {uint8_t(0), uint8_t(1), uint8_t(2), uint8_t(0x3c), kAllDictionaryTrials}) {
        const std::string stored = encoded(t, in, n, trials);
        std::vector<unsigned char> out(in.size(), 0xAA);
        ASSERT_EQ(decode(t, stored.data(), stored.size(), out.data(), n, {}), "");
        ASSERT_EQ(out, in) << dtype_name(DType(code)) << " shape " << shape << " trials " << int(trials);
      }
    }
  }
}

TEST(PackedTrials, TrialsThatStoreNoUnitChangeNoByte) {
  // The paying trials of the words themselves, in every unit size: the same stream as with all.
  const size_t n = 4096;
  int restricted = 0;
  for (uint8_t code : {uint8_t(DType::f32), uint8_t(DType::f64), uint8_t(DType::i32), uint8_t(DType::u64), uint8_t(DType::u16)}) {
    const ValueType t = value_type(code);
    for (int shape = 0; shape < 8; ++shape) {
      const auto in = test::codec_values(code, n, shape, 7 * code + shape);
      std::vector<unsigned char> words(in.size());
      bool ok = true;
      predict(Predictor::none, t, in.data(), n, {}, words.data(), ok);  // the words packed (floats ordered)
      ASSERT_TRUE(ok);
      DictionaryGains gains;
      gains.add(words.data(), n, t.size);
      const uint8_t paying = gains.paying();
      restricted += paying != kAllDictionaryTrials;
      for (uint32_t unit : kPackedUnitSizes)
        ASSERT_EQ(encoded(t, in, n, paying, unit), encoded(t, in, n, kAllDictionaryTrials, unit))
            << dtype_name(DType(code)) << " shape " << shape << " unit " << unit;
    }
  }
  EXPECT_GT(restricted, 20);  // most shapes need few of the trials
}

TEST(PackedTrials, ALargeColumnMakesOnlyTheTrialsItsSamplesTook) {
  // Two values (a charge) take the dictionary of whole words; noise crossing zero takes
  // dictionaries of its high parts and never whole words.
  const ValueType t = value_type(uint8_t(DType::f32));
  const size_t n = 4096;
  const auto charges = test::codec_values(uint8_t(DType::f32), n, 4, 1);
  const auto noise = test::codec_values(uint8_t(DType::f32), n, 1, 2);
  const std::vector<Predictor> preds{Predictor::none, Predictor::offset};
  for (const auto* in : {&charges, &noise}) {
    std::vector<Sample> samples{{in->data(), n, {}}};
    const Plan small = choose(t, preds, samples, 1, true, 2 * n);
    ASSERT_EQ(small.layout, Layout::packed);
    EXPECT_EQ(small.packed_trials, kAllDictionaryTrials);  // a column not much larger than its samples
    const Plan large = choose(t, preds, samples, 1, true, kDictionaryAnalysisRatio * n);
    EXPECT_NE(large.packed_trials, kAllDictionaryTrials);
    EXPECT_NE(large.packed_trials, 0);
    const bool whole_words = large.packed_trials & 1;
    EXPECT_EQ(whole_words, in == &charges);
    std::string stored;
    encode(large, t, in->data(), n, {}, stored);
    std::vector<unsigned char> out(in->size());
    ASSERT_EQ(decode(t, stored.data(), stored.size(), out.data(), n, {}), "");
    EXPECT_EQ(out, *in);
  }
}
