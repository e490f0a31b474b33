// Reading coded blocks (codec.hpp): a block's header checked, its streams decoded and the
// predictor inverted (decode), or its packed or binned words opened to be read one by one
// (AddressableBlock).
#include <lz4.h>

#include <cmath>
#include <cstring>

#include "motes/codec/codec.hpp"
#include "motes/codec/packed.hpp"
#include "motes/codec/predictors.hpp"
#include "motes/codec/shuffle.hpp"
#include "motes/codec/stages.hpp"
#include "motes/codec/words.hpp"
#include "motes/codec/zfp.hpp"

namespace motes::codec {

using namespace stages;
using namespace words;

namespace {

// What a coded block's header and parameter say, checked against the values' type.
struct BlockHead {
  uint8_t pred = 0, layout = 0, count = 0, param_bytes = 0;
  bool bits = false, grid = false;
  uint64_t param = 0;
  double origin = 0, step = 0;
  size_t pos = 0;  // where the first stream starts
};

std::string read_head(ValueType t, const unsigned char* p, size_t stored_n, const Context& ctx, BlockHead& h) {
  h.pred = p[0], h.layout = p[1], h.count = p[2], h.param_bytes = p[3];
  const size_t want_count = h.layout == uint8_t(Layout::planes) ? t.size : 1;
  if (h.layout > kMaxLayout) return "unknown layout " + std::to_string(h.layout);
  h.bits = h.layout == uint8_t(Layout::bits);
  if (h.count != want_count) return "block has " + std::to_string(h.count) + " streams, expected " + std::to_string(want_count);
  if (h.layout == uint8_t(Layout::planes) && t.size == 1) return "byte planes of 1-byte values";
  const uint32_t want_param = param_size(Predictor(h.pred), t);
  if (h.param_bytes != want_param)
    return "predictor parameter has " + std::to_string(h.param_bytes) + " bytes, expected " + std::to_string(want_param);
  if (h.pred == uint8_t(Predictor::quantile) && !(ctx.codes && ctx.bases)) return "quantile predictor without quantile codes";
  if (h.pred == uint8_t(Predictor::grid_quantile) && !(ctx.codes && ctx.edges))
    return "grid predictor within quantile bins without quantile codes";
  h.grid = h.pred == uint8_t(Predictor::grid) || h.pred == uint8_t(Predictor::grid_delta) ||
           h.pred == uint8_t(Predictor::grid_quantile);
  if (h.grid && (!t.is_float || t.size < 4)) return "grid predictor on values that are not floats";
  h.pos = kBlockHeaderBytes + size_t(h.count) * kStreamEntryBytes + h.param_bytes;
  if (h.pos > stored_n) return "coded block is shorter than its stream table";
  if (h.grid) {
    std::memcpy(&h.origin, p + h.pos - 16, 8);
    std::memcpy(&h.step, p + h.pos - 8, 8);
    if (!std::isfinite(h.origin) || !(h.step > 0) || !std::isfinite(h.step)) return "grid predictor with an invalid origin or step";
  } else {
    std::memcpy(&h.param, p + h.pos - h.param_bytes, h.param_bytes);
  }
  return {};
}

// Stream k (`len` stored bytes at `in`) decoded by its coder into `target`, which must
// receive exactly `stream_bytes`. A raw stream is read in place: `target` then points at it.
std::string decode_stream(size_t k, uint8_t coder, const unsigned char* in, uint32_t len, unsigned char*& target,
                          size_t stream_bytes, bool copy_raw) {
  switch (coder) {
    case uint8_t(Coder::raw):
      if (len != stream_bytes)
        return "raw stream " + std::to_string(k) + " has " + std::to_string(len) + " bytes, expected " + std::to_string(stream_bytes);
      if (copy_raw) std::memcpy(target, in, len);
      else target = const_cast<unsigned char*>(in);  // read in place
      return {};
    case uint8_t(Coder::zstd): {
      size_t r = ZSTD_decompressDCtx(zstd().d, target, stream_bytes, in, len);
      if (ZSTD_isError(r)) return "stream " + std::to_string(k) + ": zstd: " + ZSTD_getErrorName(r);
      if (r != stream_bytes)
        return "zstd stream " + std::to_string(k) + " decodes to " + std::to_string(r) + " bytes, expected " + std::to_string(stream_bytes);
      return {};
    }
    case uint8_t(Coder::lz4): {
      if (len > size_t(INT32_MAX)) return "lz4 stream too long";
      int r = LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(target), int(len), int(stream_bytes));
      if (r < 0) return "stream " + std::to_string(k) + ": lz4: corrupt data";
      if (size_t(r) != stream_bytes)
        return "lz4 stream " + std::to_string(k) + " decodes to " + std::to_string(r) + " bytes, expected " + std::to_string(stream_bytes);
      return {};
    }
  }
  return "unknown coder " + std::to_string(coder) + " in stream " + std::to_string(k);
}

// The one stream of a block of packed or binned words (after read_head): raw, to the block's
// end. `what`: "packed" or "binned", for the message.
std::string addressable_stream(const unsigned char* p, size_t stored_n, const BlockHead& h, const char* what) {
  const unsigned char* e = p + kBlockHeaderBytes;
  if (e[0] != uint8_t(Coder::raw) || e[1] || e[2] || e[3]) return std::string(what) + " stream is not stored raw";
  if (load<uint32_t>(e + 4) != stored_n - h.pos) return std::string(what) + " stream does not end where the block ends";
  return {};
}

// A packed block's words (after read_head), checked.
std::string open_packed(const unsigned char* p, size_t stored_n, const BlockHead& h, size_t n, ValueType t,
                        PackedWords& words, bool checked = false) {
  if (!addressable_predictor(Predictor(h.pred)))
    return std::string("packed words with predictor ") + predictor_name(Predictor(h.pred));
  if (std::string problem = addressable_stream(p, stored_n, h, "packed"); !problem.empty()) return problem;
  return words.open(p + h.pos, stored_n - h.pos, n, t.size, checked);
}
// A binned block's words (after read_head), checked.
std::string open_binned(const unsigned char* p, size_t stored_n, const BlockHead& h, size_t n, ValueType t,
                        BinnedWords& words, bool checked = false) {
  if (h.pred != uint8_t(Predictor::quantile))
    return std::string("binned words with predictor ") + predictor_name(Predictor(h.pred));
  if (std::string problem = addressable_stream(p, stored_n, h, "binned"); !problem.empty()) return problem;
  return words.open(p + h.pos, stored_n - h.pos, n, t.size, checked);
}

}  // namespace

bool AddressableBlock::open(ValueType t, const void* stored, size_t stored_n, size_t n, std::string& problem,
                            bool checked) {
  const unsigned char* p = static_cast<const unsigned char*>(stored);
  problem.clear();
  if (stored_n < kBlockHeaderBytes || !addressable_layout(p[1]) || !addressable_predictor(Predictor(p[0]))) return false;
  const bool binned = p[1] == uint8_t(Layout::binned);
  if (!word_size(t.size) || n * t.size > kMaxBlockBytes) return problem = "block holds more than 1 MiB of values", false;
  static const uint64_t no_bases[1] = {0};
  static const uint8_t no_codes[1] = {0};
  Context ctx;  // value() is given the codes; read_head only asks that there be some
  ctx.codes = no_codes, ctx.bases = no_bases;
  BlockHead h;
  if ((problem = read_head(t, p, stored_n, ctx, h)).empty())
    problem = binned ? open_binned(p, stored_n, h, n, t, bins_, checked)
                     : open_packed(p, stored_n, h, n, t, words_, checked);
  if (!problem.empty()) return false;
  type_ = t, pred_ = Predictor(h.pred), param_ = h.param, binned_ = binned;
  return true;
}

bool AddressableBlock::value(size_t i, const uint8_t* codes, const uint64_t* bases, unsigned char* dst) const {
  uint64_t w;
  if (binned_ ? !bins_.word(i, codes, w) : !words_.word(i, w)) return false;
  const uint8_t code = codes ? codes[i] : 0;
  with_word(type_.size, [&](auto z) {
    using U = decltype(z);
    U v = U(w);
    if (pred_ == Predictor::offset) v = unordered<U>(U(v + U(param_)), type_);
    else if (pred_ == Predictor::quantile) v = unordered<U>(U(v + U(bases[code])), type_);
    put<U>(dst, v);
  });
  return true;
}

std::string decode(ValueType t, const void* stored, size_t stored_n, void* dst, size_t n, const Context& ctx) {
  const unsigned char* p = static_cast<const unsigned char*>(stored);
  if (!word_size(t.size)) return "unsupported value size " + std::to_string(t.size);
  if (n * t.size > kMaxBlockBytes) return "block holds more than 1 MiB of values";
  if (stored_n < kBlockHeaderBytes) return "coded block is shorter than its 4-byte header";
  if (p[0] > kMaxPredictor) return "unknown predictor " + std::to_string(p[0]);
  if (p[1] > kMaxLayout) return "unknown layout " + std::to_string(p[1]);
  if (p[0] == uint8_t(Predictor::zfp)) return decode_zfp(t, p, stored_n, dst, n);
  BlockHead h;
  if (std::string problem = read_head(t, p, stored_n, ctx, h); !problem.empty()) return problem;
  if (h.layout == uint8_t(Layout::binned)) {
    BinnedWords words;
    if (std::string problem = open_binned(p, stored_n, h, n, t, words); !problem.empty()) return problem;
    // The quantile predictor's inverse (the only one binned words have) in the same pass.
    return words.unpack(ctx.codes, static_cast<unsigned char*>(dst), ctx.bases, unorder_map(t));
  }
  if (h.layout == uint8_t(Layout::packed)) {
    PackedWords words;
    if (std::string problem = open_packed(p, stored_n, h, n, t, words); !problem.empty()) return problem;
    // The offset predictor's inverse (plus its parameter, then unordered()) in the same pass;
    // the quantile predictor's (a base per code) in a second one.
    const bool offset = h.pred == uint8_t(Predictor::offset);
    if (std::string problem = words.unpack(static_cast<unsigned char*>(dst), offset ? h.param : 0,
                                           offset ? unorder_map(t) : WordMap{});
        !problem.empty())
      return problem;
    if (!offset) unpredict(Predictor(h.pred), t, static_cast<unsigned char*>(dst), n, ctx, h.param, h.origin, h.step);
    return {};
  }
  const size_t count = h.count;
  const size_t stream_bytes = h.bits ? bit_stream_bytes(n, t.size) : count > 1 ? n : n * t.size;
  Scratch& s = scratch();
  if (s.planes.size() < n * t.size) s.planes.resize(n * t.size);
  if (h.bits && s.bits.size() < stream_bytes) s.bits.resize(stream_bytes);
  const unsigned char* streams[8];
  unsigned char* out = static_cast<unsigned char*>(dst);
  size_t pos = h.pos;
  for (size_t k = 0; k < count; ++k) {
    const unsigned char* e = p + kBlockHeaderBytes + k * kStreamEntryBytes;
    const uint32_t len = load<uint32_t>(e + 4);
    if (e[1] || e[2] || e[3]) return "stream entry " + std::to_string(k) + " has nonzero reserved bytes";
    if (len > stored_n - pos) return "stream " + std::to_string(k) + " runs past the end of the block";
    // One stream of values decodes straight into dst; byte planes go to scratch, then are
    // interleaved; bit planes go to scratch, then become byte planes, then values.
    unsigned char* target = h.bits ? s.bits.data() : count == 1 ? out : s.planes.data() + k * stream_bytes;
    if (std::string problem = decode_stream(k, e[0], p + pos, len, target, stream_bytes, count == 1 && !h.bits);
        !problem.empty())
      return problem;
    streams[k] = target;
    pos += len;
  }
  if (pos != stored_n) return "coded block has " + std::to_string(stored_n - pos) + " trailing bytes";
  if (h.bits) {
    unsigned char* planes[8];
    for (uint32_t k = 0; k < t.size; ++k) planes[k] = t.size == 1 ? out : s.planes.data() + k * n;
    if (!byte_planes(streams[0], n, t.size, planes)) return "bit planes have bits set past the block's last value";
    if (t.size > 1) {
      const unsigned char* cp[8];
      for (uint32_t k = 0; k < t.size; ++k) cp[k] = planes[k];
      unshuffle(cp, n, t.size, out);
    }
  }
  if (count > 1) unshuffle(streams, n, t.size, out);
  unpredict(Predictor(h.pred), t, out, n, ctx, h.param, h.origin, h.step);
  return {};
}

}  // namespace motes::codec
