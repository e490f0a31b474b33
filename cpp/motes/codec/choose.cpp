// Choosing a column's plan (codec.hpp `choose`): every predictor and layout tried on sample
// blocks, the fewest bytes taken, with the slack given to bit planes and to value-addressable
// words.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/codec/predictors.hpp"
#include "motes/codec/stages.hpp"

namespace motes::codec {

using namespace stages;

namespace {

// The dictionary trials that pay on the samples' packed words (DictionaryGains), for the
// writer to make on every block of the column and no others.
uint8_t packed_trials(Predictor pred, const ValueType& t, const std::vector<Sample>& samples) {
  DictionaryGains gains;
  std::vector<unsigned char> words;
  for (const Sample& s : samples) {
    words.resize(s.count * t.size);
    bool ok = true;
    predict(pred, t, static_cast<const unsigned char*>(s.values), s.count, s.ctx, words.data(), ok);
    if (!ok) return kAllDictionaryTrials;  // a sample the predictor refused: decide nothing
    gains.add(words.data(), s.count, t.size);
  }
  return gains.paying();
}

}  // namespace

Plan choose(ValueType t, const std::vector<Predictor>& predictors, const std::vector<Sample>& samples, int zstd_level,
            bool addressable, uint64_t column_values) {
  Plan best;
  best.layout = stored_layout(Layout::planes, t.size);
  best.coders.assign(best.layout == Layout::planes ? t.size : 1, Coder::raw);
  best.zstd_level = zstd_level;
  uint64_t best_bytes = UINT64_MAX, bits_bytes = UINT64_MAX;
  Plan bits_plan;
  std::vector<const unsigned char*> streams;
  std::string buf;
  for (Predictor pred : predictors) {
    if (pred == Predictor::zfp) continue;  // lossy: taken on request (encode_zfp), never chosen by size
    if (pred == Predictor::quantile || pred == Predictor::grid_quantile) {
      bool ok = !samples.empty();
      for (const Sample& s : samples) ok &= s.ctx.codes && (pred == Predictor::quantile ? s.ctx.bases != nullptr : s.ctx.edges != nullptr);
      if (!ok) continue;
    }
    for (Layout layout : {best.layout, Layout::bits}) {
      const size_t count = layout == Layout::planes ? t.size : 1;
      std::vector<uint64_t> raw(count, 0), zs(count, 0), lz(count, 0);
      bool usable = true;
      for (const Sample& s : samples) {
        size_t stream_bytes = 0;
        bool ok = true;
        prepare(pred, layout, t, s.values, s.count, s.ctx, streams, stream_bytes, ok);
        if (!ok) {
          usable = false;
          break;
        }
        for (size_t k = 0; k < count; ++k) {
          raw[k] += stream_bytes;
          zs[k] += code_stream(Coder::zstd, zstd_level, streams[k], stream_bytes, buf) ? buf.size() : stream_bytes;
          lz[k] += code_stream(Coder::lz4, zstd_level, streams[k], stream_bytes, buf) ? buf.size() : stream_bytes;
        }
      }
      if (!usable) break;  // the predictor does not suit these values, whatever the layout
      Plan plan = best;
      plan.predictor = pred;
      plan.layout = layout;
      plan.coders.assign(count, Coder::raw);
      uint64_t total = 0;
      for (size_t k = 0; k < count; ++k) {
        const double limit = double(raw[k]) * (1.0 - kMinSaving);
        Coder c = Coder::raw;
        uint64_t bytes = raw[k];
        if (double(zs[k]) <= limit) c = Coder::zstd, bytes = zs[k];
        if (double(lz[k]) <= limit && double(lz[k]) <= double(zs[k]) * (1.0 + kLz4Slack)) c = Coder::lz4, bytes = lz[k];
        plan.coders[k] = c;
        total += bytes;
      }
      if (layout == Layout::bits) {
        if (plan.coders[0] != Coder::raw && total < bits_bytes) bits_plan = plan, bits_bytes = total;
      } else if (total < best_bytes) {
        best = plan, best_bytes = total;
      }
    }
  }
  if (bits_bytes != UINT64_MAX && double(bits_bytes) <= double(best_bytes) * (1.0 - kBitsSaving))
    best = bits_plan, best_bytes = bits_bytes;
  if (!addressable || samples.empty()) return best;
  // Packed words: offset (any type) and, where the column has codes, quantile.
  std::vector<Predictor> packed = {Predictor::offset};
  Predictor packed_pred = Predictor::offset;
  uint64_t packed_bytes = UINT64_MAX;
  if (std::find(predictors.begin(), predictors.end(), Predictor::quantile) != predictors.end()) packed.push_back(Predictor::quantile);
  Layout packed_layout = Layout::packed;
  for (Predictor pred : packed) {
    for (Layout layout : {Layout::packed, Layout::binned}) {
      if (layout == Layout::binned && pred != Predictor::quantile) continue;
      uint64_t total = 0;
      bool ok = true;
      for (const Sample& s : samples) {
        if (pred == Predictor::quantile && !(s.ctx.codes && s.ctx.bases)) ok = false;
        size_t stream_bytes = 0;
        if (ok) prepare(pred, layout, t, s.values, s.count, s.ctx, streams, stream_bytes, ok);
        total += stream_bytes + kBlockHeaderBytes + kStreamEntryBytes + param_size(pred, t);
      }
      if (ok && total < packed_bytes) packed_pred = pred, packed_layout = layout, packed_bytes = total;
    }
  }
  uint64_t raw_bytes = 0;
  for (const Sample& s : samples) raw_bytes += s.count * t.size;
  // Raw values are read in place, as addressable as packed ones: packed only when smaller.
  const bool slack = !best.raw();
  if (packed_bytes != UINT64_MAX &&
      (packed_bytes < best_bytes || (slack && (double(packed_bytes) <= double(best_bytes) * (1.0 + kPackedSlack) ||
                                               double(packed_bytes) <= double(best_bytes) + double(raw_bytes) * kPackedRawSlack)))) {
    best.predictor = packed_pred, best.layout = packed_layout, best.coders.assign(1, Coder::raw);
    uint64_t sampled = 0;
    for (const Sample& s : samples) sampled += s.count;
    if (packed_layout == Layout::packed && sampled && column_values / sampled >= kDictionaryAnalysisRatio)
      best.packed_trials = packed_trials(packed_pred, t, samples);
  }
  return best;
}

}  // namespace motes::codec
