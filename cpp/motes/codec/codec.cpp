#include "motes/codec/codec.hpp"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "motes/codec/predictors.hpp"
#include "motes/codec/shuffle.hpp"
#include "motes/codec/words.hpp"
#include "motes/codec/zfp.hpp"
#include "motes/core/types.hpp"

namespace motes::codec {

using namespace words;

namespace {

struct Zstd {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Zstd() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};
Zstd& zstd() {
  thread_local Zstd z;
  return z;
}

// Per-thread scratch buffers, grown on demand (a block is at most kMaxBlockBytes).
struct Scratch {
  std::vector<unsigned char> words, planes, bits;
  std::string packed;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Codes n bytes with `coder` into out; false when the coder does not make them smaller.
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

// The bytes of the one stream of Layout::bits: 8 * size bit planes of ceil(n / 8) bytes.
size_t bit_stream_bytes(size_t n, uint32_t size) { return size_t(8) * size * ((n + 7) / 8); }

// The layout a block is stored with: byte planes of 1-byte values are the values themselves.
Layout stored_layout(Layout wanted, uint32_t size) {
  return wanted == Layout::planes && size == 1 ? Layout::whole : wanted;
}

// Transforms n values into streams (pointers into scratch): returns the parameter.
uint64_t prepare(Predictor pred, Layout layout, const ValueType& t, const void* src, size_t n, const Context& ctx,
                 std::vector<const unsigned char*>& streams, size_t& stream_bytes, bool& ok) {
  Scratch& s = scratch();
  const size_t bytes = n * t.size;
  if (s.words.size() < bytes) s.words.resize(bytes);
  const uint64_t param = predict(pred, t, static_cast<const unsigned char*>(src), n, ctx, s.words.data(), ok);
  streams.clear();
  if (!ok) return 0;
  if (addressable_layout(uint8_t(layout))) {
    if (!addressable_predictor(pred) || (layout == Layout::binned && (pred != Predictor::quantile || !ctx.codes))) {
      ok = false;
      return 0;
    }
    s.packed.clear();
    if (layout == Layout::binned) pack_binned(s.words.data(), ctx.codes, n, t.size, s.packed);
    else pack_words(s.words.data(), n, t.size, s.packed);
    streams.push_back(reinterpret_cast<const unsigned char*>(s.packed.data()));
    stream_bytes = s.packed.size();
    return param;
  }
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

}  // namespace

const char* coder_name(Coder c) {
  switch (c) {
    case Coder::raw: return "raw";
    case Coder::zstd: return "zstd";
    case Coder::lz4: return "lz4";
  }
  return "unknown";
}

ValueType value_type(uint8_t code) {
  for (const DTypeInfo& d : dtype_table)
    if (uint8_t(d.dtype) == code) return {d.size, d.kind == 'f', d.kind != 'u'};
  return {8, false, false};  // callers pass valid codes (the schema is checked first)
}

bool Plan::raw() const {
  if (predictor != Predictor::none || layout == Layout::bits) return false;
  for (Coder c : coders)
    if (c != Coder::raw) return false;
  return true;
}

std::string Plan::name(uint32_t size) const {
  if (raw()) return "raw";
  if (predictor == Predictor::zfp) return "zfp";  // one zfp stream, whatever the layout
  std::string out;
  if (predictor != Predictor::none) out += std::string(predictor_name(predictor)) + "+";
  if (layout == Layout::planes && size > 1) out += "shuffle+";
  if (layout == Layout::bits) out += "bitshuffle+";
  if (layout == Layout::packed) return out + "packed";
  if (layout == Layout::binned) return out + "binned";
  // The coders of the streams: "zstd" when all agree, else per stream ("raw,raw,zstd,zstd").
  bool same = true;
  for (Coder c : coders) same &= c == coders[0];
  if (same) return out + coder_name(coders.empty() ? Coder::raw : coders[0]);
  out += "[";
  for (size_t k = 0; k < coders.size(); ++k) {
    if (k) out += ",";
    out += coder_name(coders[k]);
  }
  return out + "]";
}

namespace {
uint32_t param_size(Predictor p, const ValueType& t) {
  return p == Predictor::offset ? t.size
         : (p == Predictor::grid || p == Predictor::grid_delta || p == Predictor::grid_quantile) ? 16
                                                                                                  : 0;
}
}  // namespace

void encode(const Plan& plan, ValueType t, const void* src, size_t n, const Context& ctx, std::string& out) {
  std::vector<const unsigned char*> streams;
  size_t stream_bytes = 0;
  Predictor pred = plan.predictor;
  if (pred == Predictor::zfp) {  // the whole block is one zfp stream (zfp.cpp); else kept exact
    if (encode_zfp(t, src, n, ctx, out)) return;
    pred = Predictor::none;
  }
  bool ok = true;
  uint64_t param = prepare(pred, plan.layout, t, src, n, ctx, streams, stream_bytes, ok);
  Layout layout = plan.layout;
  if (!ok) {  // values off the grid (or a predictor this type cannot take): this block is kept exact
    pred = Predictor::none;
    if (layout == Layout::binned) layout = Layout::packed;  // binned words are quantile residuals
    param = prepare(pred, layout, t, src, n, ctx, streams, stream_bytes, ok);
  }
  const uint32_t param_bytes = param_size(pred, t);
  const size_t count = streams.size();
  out.assign(kBlockHeaderBytes + count * kStreamEntryBytes + param_bytes, '\0');
  out[0] = char(pred);
  out[1] = char(stored_layout(layout, t.size));
  out[2] = char(count);
  out[3] = char(param_bytes);
  unsigned char* pp = reinterpret_cast<unsigned char*>(out.data()) + kBlockHeaderBytes + count * kStreamEntryBytes;
  if (param_bytes == 16) {
    std::memcpy(pp, &ctx.grid_origin, 8);
    std::memcpy(pp + 8, &ctx.grid_step, 8);
  } else {
    std::memcpy(pp, &param, param_bytes);
  }
  thread_local std::string buf;
  const bool raw_only = addressable_layout(uint8_t(layout));  // words read where they lie
  for (size_t k = 0; k < count; ++k) {
    Coder c = k < plan.coders.size() && !raw_only ? plan.coders[k] : Coder::raw;
    const size_t at = out.size();
    if (c != Coder::raw && code_stream(c, plan.zstd_level, streams[k], stream_bytes, buf)) {
      out += buf;
    } else {
      c = Coder::raw;
      out.append(reinterpret_cast<const char*>(streams[k]), stream_bytes);
    }
    unsigned char* entry = reinterpret_cast<unsigned char*>(out.data()) + kBlockHeaderBytes + k * kStreamEntryBytes;
    entry[0] = uint8_t(c);
    put<uint32_t>(entry + 4, uint32_t(out.size() - at));
  }
}

bool describe(const void* stored, size_t stored_n, Plan& plan) {
  const unsigned char* p = static_cast<const unsigned char*>(stored);
  if (stored_n < kBlockHeaderBytes) return false;
  const size_t count = p[2];
  if (p[0] > kMaxPredictor || p[1] > kMaxLayout || count == 0 || count > 8 ||
      stored_n < kBlockHeaderBytes + count * kStreamEntryBytes)
    return false;
  plan.predictor = Predictor(p[0]);
  plan.layout = Layout(p[1]);
  plan.coders.clear();
  for (size_t k = 0; k < count; ++k) {
    uint8_t c = p[kBlockHeaderBytes + k * kStreamEntryBytes];
    if (c > kMaxCoder) return false;
    plan.coders.push_back(Coder(c));
  }
  return true;
}

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

Plan choose(ValueType t, const std::vector<Predictor>& predictors, const std::vector<Sample>& samples, int zstd_level,
            bool addressable) {
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
  }
  return best;
}

}  // namespace motes::codec
