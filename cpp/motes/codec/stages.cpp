#include "motes/codec/stages.hpp"

#include <lz4.h>

#include "motes/codec/packed.hpp"
#include "motes/codec/predictors.hpp"
#include "motes/codec/shuffle.hpp"

namespace motes::codec::stages {

Zstd& zstd() {
  thread_local Zstd z;
  return z;
}

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

bool code_stream(Coder coder, int level, const unsigned char* in, size_t n, std::string& out) {
  if (coder == Coder::zstd) {
    out.resize(ZSTD_compressBound(n));
    size_t r = ZSTD_compressCCtx(zstd().c, out.data(), out.size(), in, n, level);
    if (ZSTD_isError(r) || r >= n) return false;
    out.resize(r);
    return true;
  }
  if (coder == Coder::lz4) {
    if (n > size_t(LZ4_MAX_INPUT_SIZE)) return false;
    out.resize(size_t(LZ4_compressBound(int(n))));
    int r = LZ4_compress_default(reinterpret_cast<const char*>(in), out.data(), int(n), int(out.size()));
    if (r <= 0 || size_t(r) >= n) return false;
    out.resize(size_t(r));
    return true;
  }
  return false;
}

uint32_t param_size(Predictor p, const ValueType& t) {
  return p == Predictor::offset ? t.size
         : (p == Predictor::grid || p == Predictor::grid_delta || p == Predictor::grid_quantile) ? 16
                                                                                                  : 0;
}

uint64_t pack_stream(Predictor pred, Layout layout, const ValueType& t, const void* src, size_t n, const Context& ctx,
                     std::string& out, bool& ok, uint8_t trials) {
  Scratch& s = scratch();
  const size_t bytes = n * t.size;
  if (s.words.size() < bytes) s.words.resize(bytes);
  const uint64_t param = predict(pred, t, static_cast<const unsigned char*>(src), n, ctx, s.words.data(), ok);
  if (!ok) return 0;
  if (!addressable_predictor(pred) || (layout == Layout::binned && (pred != Predictor::quantile || !ctx.codes))) {
    ok = false;
    return 0;
  }
  if (layout == Layout::binned) pack_binned(s.words.data(), ctx.codes, n, t.size, out);
  else if (ctx.packed_unit) pack_words(s.words.data(), n, t.size, out, ctx.packed_unit, trials);
  else {  // the smallest of three unit sizes
    std::string& best = s.packed;
    std::string& trial = s.trial;
    best.clear();
    for (uint32_t unit : kPackedUnitSizes) {
      trial.clear();
      pack_words(s.words.data(), n, t.size, trial, unit, trials);
      if (best.empty() || trial.size() < best.size()) best.swap(trial);
    }
    out += best;
  }
  return param;
}

uint64_t prepare(Predictor pred, Layout layout, const ValueType& t, const void* src, size_t n, const Context& ctx,
                 std::vector<const unsigned char*>& streams, size_t& stream_bytes, bool& ok) {
  Scratch& s = scratch();
  streams.clear();
  if (addressable_layout(uint8_t(layout))) {
    s.stream.clear();
    const uint64_t param = pack_stream(pred, layout, t, src, n, ctx, s.stream, ok);
    if (!ok) return 0;
    streams.push_back(reinterpret_cast<const unsigned char*>(s.stream.data()));
    stream_bytes = s.stream.size();
    return param;
  }
  const size_t bytes = n * t.size;
  if (s.words.size() < bytes) s.words.resize(bytes);
  const uint64_t param = predict(pred, t, static_cast<const unsigned char*>(src), n, ctx, s.words.data(), ok);
  if (!ok) return 0;
  if (layout == Layout::whole || (layout == Layout::planes && t.size == 1)) {
    streams.push_back(s.words.data());
    stream_bytes = bytes;
    return param;
  }
  if (s.planes.size() < bytes) s.planes.resize(bytes);
  unsigned char* planes[8];
  for (uint32_t k = 0; k < t.size; ++k) planes[k] = s.planes.data() + k * n;
  shuffle(s.words.data(), n, t.size, planes);
  if (layout == Layout::bits) {
    stream_bytes = bit_stream_bytes(n, t.size);
    if (s.bits.size() < stream_bytes) s.bits.resize(stream_bytes);
    bit_planes(planes, n, t.size, s.bits.data());
    streams.push_back(s.bits.data());
    return param;
  }
  for (uint32_t k = 0; k < t.size; ++k) streams.push_back(planes[k]);
  stream_bytes = n;
  return param;
}

}  // namespace motes::codec::stages
