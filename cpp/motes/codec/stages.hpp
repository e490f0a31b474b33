// The stages a coded block goes through, shared by encoding (codec.cpp), choosing a plan
// (choose.cpp) and decoding (decode.cpp); internal to codec/: per-thread zstd contexts and
// scratch buffers, a stream coded by zstd or lz4, values predicted and laid out into
// streams, and the sizes of a block's parts.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "motes/codec/codec.hpp"

namespace motes::codec::stages {

// Per-thread zstd contexts.
struct Zstd {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Zstd() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};
Zstd& zstd();

// Per-thread scratch buffers, grown on demand (a block is at most kMaxBlockBytes).
struct Scratch {
  std::vector<unsigned char> words, planes, bits;
  std::string packed, trial;  // pack_stream: the smallest unit size so far, the one tried
  std::string stream;         // prepare: the packed or binned stream it points to
};
Scratch& scratch();

// Codes n bytes with `coder` into out; false when the coder does not make them smaller.
bool code_stream(Coder coder, int level, const unsigned char* in, size_t n, std::string& out);

// The bytes of the one stream of Layout::bits: 8 * size bit planes of ceil(n / 8) bytes.
inline size_t bit_stream_bytes(size_t n, uint32_t size) { return size_t(8) * size * ((n + 7) / 8); }

// The layout a block is stored with: byte planes of 1-byte values are the values themselves.
inline Layout stored_layout(Layout wanted, uint32_t size) {
  return wanted == Layout::planes && size == 1 ? Layout::whole : wanted;
}

// The bytes of a predictor's parameter in a block's header.
uint32_t param_size(Predictor p, const ValueType& t);

// The one stream of an addressable layout (packed or binned words) of n values appended to
// out, with no copy in scratch: returns the parameter; ok false (out as it was) when the
// predictor cannot take the values or does not suit the layout. Packed units make the
// dictionary trials of `trials` (packed.hpp).
uint64_t pack_stream(Predictor pred, Layout layout, const ValueType& t, const void* src, size_t n, const Context& ctx,
                     std::string& out, bool& ok, uint8_t trials = kAllDictionaryTrials);

// Transforms n values into streams (pointers into scratch): returns the parameter.
uint64_t prepare(Predictor pred, Layout layout, const ValueType& t, const void* src, size_t n, const Context& ctx,
                 std::vector<const unsigned char*>& streams, size_t& stream_bytes, bool& ok);

}  // namespace motes::codec::stages
