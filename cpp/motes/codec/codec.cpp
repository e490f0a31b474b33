// Writing coded blocks (codec.hpp): the names of plans and coders, a block encoded with a
// plan (encode), and a stored block's plan read back (describe). Reading is decode.cpp, the
// choice of a plan choose.cpp, the stages both sides share stages.cpp.
#include "motes/codec/codec.hpp"

#include <cstring>

#include "motes/codec/stages.hpp"
#include "motes/codec/words.hpp"
#include "motes/codec/zfp.hpp"
#include "motes/core/types.hpp"

namespace motes::codec {

using namespace stages;
using namespace words;

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

void encode(const Plan& plan, ValueType t, const void* src, size_t n, const Context& ctx, std::string& out) {
  out.clear();
  encode_append(plan, t, src, n, ctx, out);
}

void encode_append(const Plan& plan, ValueType t, const void* src, size_t n, const Context& ctx, std::string& out) {
  Predictor pred = plan.predictor;
  if (pred == Predictor::zfp) {  // the whole block is one zfp stream (zfp.cpp); else kept exact
    thread_local std::string z;
    if (encode_zfp(t, src, n, ctx, z)) {
      out += z;
      return;
    }
    pred = Predictor::none;
  }
  const size_t start = out.size();
  Layout layout = plan.layout;
  for (bool exact : {false, true}) {
    if (exact) {  // values off the grid (or a predictor this type cannot take): kept exact
      pred = Predictor::none;
      if (layout == Layout::binned) layout = Layout::packed;  // binned words are quantile residuals
    }
    const uint32_t param_bytes = param_size(pred, t);
    bool ok = true;
    uint64_t param = 0;
    std::vector<const unsigned char*> streams;  // the streams to code (prepare's)
    size_t stream_bytes = 0, count = 1;
    // Packed or binned words: one raw stream, packed straight into place after the header.
    const bool in_place = addressable_layout(uint8_t(layout));
    if (!in_place) param = prepare(pred, layout, t, src, n, ctx, streams, stream_bytes, ok), count = streams.size();
    const size_t streams_at = start + kBlockHeaderBytes + count * kStreamEntryBytes + param_bytes;
    out.resize(streams_at, '\0');
    if (in_place) param = pack_stream(pred, layout, t, src, n, ctx, out, ok, plan.packed_trials);
    if (!ok && !exact) {
      out.resize(start);
      continue;
    }
    unsigned char* head = reinterpret_cast<unsigned char*>(out.data()) + start;
    head[0] = uint8_t(pred);
    head[1] = uint8_t(stored_layout(layout, t.size));
    head[2] = uint8_t(count);
    head[3] = uint8_t(param_bytes);
    unsigned char* pp = reinterpret_cast<unsigned char*>(out.data()) + streams_at - param_bytes;
    if (param_bytes == 16) {
      std::memcpy(pp, &ctx.grid_origin, 8);
      std::memcpy(pp + 8, &ctx.grid_step, 8);
    } else {
      std::memcpy(pp, &param, param_bytes);
    }
    if (in_place) {
      head[kBlockHeaderBytes] = uint8_t(Coder::raw);
      put<uint32_t>(head + kBlockHeaderBytes + 4, uint32_t(out.size() - streams_at));
      return;
    }
    thread_local std::string buf;
    for (size_t k = 0; k < count; ++k) {
      Coder c = k < plan.coders.size() ? plan.coders[k] : Coder::raw;
      const size_t at = out.size();
      if (c != Coder::raw && code_stream(c, plan.zstd_level, streams[k], stream_bytes, buf)) {
        out += buf;
      } else {
        c = Coder::raw;
        out.append(reinterpret_cast<const char*>(streams[k]), stream_bytes);
      }
      unsigned char* entry = reinterpret_cast<unsigned char*>(out.data()) + start + kBlockHeaderBytes + k * kStreamEntryBytes;
      entry[0] = uint8_t(c);
      put<uint32_t>(entry + 4, uint32_t(out.size() - at));
    }
    return;
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

}  // namespace motes::codec
