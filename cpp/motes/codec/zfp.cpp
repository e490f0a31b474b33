#include "motes/codec/zfp.hpp"

#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "motes/codec/words.hpp"

namespace motes::codec {

using namespace words;

namespace {

// The Z address of HZ index hz in a grid of `bits` Z-address bits (HzOrder::z_of_hz).
uint64_t z_of_hz(uint64_t hz, int bits) {
  if (hz == 0) return 0;
  const int h = 64 - __builtin_clzll(hz);
  return (((hz - (uint64_t(1) << (h - 1))) << 1) | 1) << (bits - h);
}

std::string axes_key(bool hierarchical, const std::vector<uint8_t>& axes) {
  std::string key(1, hierarchical ? 'H' : 'L');
  for (uint8_t a : axes) key += char('0' + a);
  return key;
}

// The box of the last (hierarchical, axes) this thread asked for: consecutive blocks of a
// field level share it.
const ZfpBox* cached_box(bool hierarchical, const std::vector<uint8_t>& axes, std::string& why) {
  thread_local std::string key;
  thread_local ZfpBox box;
  thread_local bool valid = false;
  std::string k = axes_key(hierarchical, axes);
  if (valid && k == key) return &box;
  valid = false;
  if (!zfp_box(hierarchical, axes, box, &why)) return nullptr;
  key = std::move(k);
  valid = true;
  return &box;
}

// The zfp array of a box: its axes longer than one sample, x first (zfp's nx varies fastest).
struct Shape {
  size_t dims[3] = {1, 1, 1};
  int nd = 1;
};
Shape shape_of(const ZfpBox& box) {
  Shape s;
  int k = 0;
  for (uint32_t d : box.dims)
    if (d > 1) s.dims[k++] = d;
  s.nd = std::max(k, 1);
  return s;
}

struct FieldPtr {
  zfp_field* f;
  ~FieldPtr() { zfp_field_free(f); }
};
struct StreamPtr {
  zfp_stream* z;
  bitstream* b = nullptr;
  ~StreamPtr() {
    if (b) stream_close(b);
    zfp_stream_close(z);
  }
};

zfp_field* make_field(void* data, bool f64, const Shape& s) {
  const zfp_type type = f64 ? zfp_type_double : zfp_type_float;
  if (s.nd == 1) return zfp_field_1d(data, type, s.dims[0]);
  if (s.nd == 2) return zfp_field_2d(data, type, s.dims[0], s.dims[1]);
  return zfp_field_3d(data, type, s.dims[0], s.dims[1], s.dims[2]);
}

// At most this many bits per zfp block of 4^nd values: 1 + exponent bits + 4^nd · (precision
// + 1), above zfp's own bound (zfp_stream_maximum_size: ... + 4^nd − 1 + 4^nd · precision), so
// that valid streams decode as coded while a decoder fed garbage reads at most this many bits
// per block (zfp's default, ZFP_MAX_BITS, would let it read far more).
unsigned block_max_bits(bool f64, int nd) {
  const unsigned values = 1u << (2 * nd);
  return std::min<unsigned>(ZFP_MAX_BITS, 1 + (f64 ? 11 : 8) + values * ((f64 ? 64 : 32) + 1));
}

// Fixed accuracy `tolerance` with the per-block bound above: the same on both sides.
bool configure(zfp_stream* z, double tolerance, bool f64, int nd) {
  zfp_stream_set_accuracy(z, tolerance);
  unsigned minbits = 0, maxbits = 0, maxprec = 0;
  int minexp = 0;
  zfp_stream_params(z, &minbits, &maxbits, &maxprec, &minexp);
  return zfp_stream_set_params(z, ZFP_MIN_BITS, block_max_bits(f64, nd), ZFP_MAX_PREC, minexp) == zfp_true;
}

bool fail(std::string* why, const std::string& text) {
  if (why) *why = text;
  return false;
}

template <class F>
void gather(const F* src, const ZfpBox& box, size_t n, F* lattice) {
  for (size_t i = 0; i < n; ++i) lattice[box.lattice[i]] = src[i];
}
template <class F>
void scatter(const F* lattice, const ZfpBox& box, size_t n, F* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = lattice[box.lattice[i]];
}

// Per-thread buffers: the block in lattice order, and the padded copy of a stream.
struct Buffers {
  std::vector<uint64_t> lattice, stream;
};
Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

}  // namespace

bool zfp_box(bool hierarchical, const std::vector<uint8_t>& axes, ZfpBox& box, std::string* why) {
  const int bits = int(axes.size());
  if (bits > kZfpMaxBits) return fail(why, "zfp block of " + std::to_string(bits) + " Z-address bits (at most 20)");
  int count[3] = {0, 0, 0};
  for (uint8_t a : axes) {
    if (a > 2) return fail(why, "zfp block with axis " + std::to_string(a) + " (0, 1 or 2)");
    ++count[a];
  }
  const int offset[3] = {0, count[0], count[0] + count[1]};
  // Z bit k (0 = the finest) is digit bits - k; it is the next bit of its axis, counting from
  // the finest, and that axis's bits sit at offset[axis] in the lattice index.
  uint32_t table[3][256] = {};
  int seen[3] = {0, 0, 0};
  for (int k = 0; k < bits; ++k) {
    const int a = axes[size_t(bits - 1 - k)];
    const uint32_t bit = uint32_t(1) << (offset[a] + seen[a]++);
    for (uint32_t v = 0; v < 256; ++v)
      if (v >> (k % 8) & 1) table[k / 8][v] |= bit;
  }
  for (int a = 0; a < 3; ++a) box.dims[size_t(a)] = uint32_t(1) << count[a];
  const size_t n = size_t(1) << bits;
  box.lattice.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t z = hierarchical ? z_of_hz(i, bits) : i;
    box.lattice[i] = table[0][z & 0xff] | table[1][(z >> 8) & 0xff] | table[2][(z >> 16) & 0xff];
  }
  return true;
}

bool zfp_block_context(std::string_view bitmask, int block_bits, uint64_t block, Context& ctx) {
  if (bitmask.empty() || bitmask[0] != 'V' || block_bits < 0) return false;
  const int maxh = int(bitmask.size()) - 1;
  if (maxh > 63) return false;
  for (char c : bitmask.substr(1))
    if (c < '0' || c > '2') return false;
  const int bits = std::min(block_bits, maxh);
  if (block >= (uint64_t(1) << (maxh - bits))) return false;
  if (block == 0) {
    ctx.zfp_hierarchical = true;
    ctx.zfp_axes = bitmask.substr(1, size_t(bits));
    return true;
  }
  const int h = bits + 1 + (63 - __builtin_clzll(block));
  ctx.zfp_hierarchical = false;
  ctx.zfp_axes = bitmask.substr(size_t(h - bits), size_t(bits));
  return true;
}

bool encode_zfp(ValueType t, const void* src, size_t n, const Context& ctx, std::string& out, std::string* why) {
  if (!t.is_float || (t.size != 4 && t.size != 8)) return fail(why, "zfp codes f32 and f64 values only");
  const bool f64 = t.size == 8;
  const double tol = ctx.zfp_tolerance;
  if (!std::isfinite(tol) || !(tol > 0)) return fail(why, "zfp tolerance must be a finite positive number");
  const int bits = int(ctx.zfp_axes.size());
  if (bits > kZfpMaxBits || n != size_t(1) << bits)
    return fail(why, "zfp block of " + std::to_string(n) + " values with " + std::to_string(bits) + " axis digits");
  if (n * t.size > kMaxBlockBytes) return fail(why, "zfp block holds more than 1 MiB of values");
  std::vector<uint8_t> axes(static_cast<size_t>(bits), uint8_t(0));
  for (int k = 0; k < bits; ++k) {
    const char c = ctx.zfp_axes[size_t(k)];
    if (c < '0' || c > '2') return fail(why, std::string("zfp axis digit '") + c + "' (0, 1 or 2)");
    axes[size_t(k)] = uint8_t(c - '0');
  }
  if (f64) {
    const double* v = static_cast<const double*>(src);
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(v[i])) return fail(why, "zfp block with a NaN or infinite value");
  } else {
    const float* v = static_cast<const float*>(src);
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(v[i])) return fail(why, "zfp block with a NaN or infinite value");
  }
  std::string problem;
  const ZfpBox* box = cached_box(ctx.zfp_hierarchical, axes, problem);
  if (!box) return fail(why, problem);
  Buffers& buf = buffers();
  buf.lattice.resize((n * t.size + 7) / 8);
  if (f64) gather(static_cast<const double*>(src), *box, n, reinterpret_cast<double*>(buf.lattice.data()));
  else gather(static_cast<const float*>(src), *box, n, reinterpret_cast<float*>(buf.lattice.data()));

  const Shape shape = shape_of(*box);
  FieldPtr field{make_field(buf.lattice.data(), f64, shape)};
  StreamPtr zs{zfp_stream_open(nullptr)};
  if (!field.f || !zs.z || !configure(zs.z, tol, f64, shape.nd)) return fail(why, "zfp: cannot set up the stream");
  const size_t cap = zfp_stream_maximum_size(zs.z, field.f);
  buf.stream.assign(cap / 8 + 2, 0);
  zs.b = stream_open(buf.stream.data(), buf.stream.size() * 8);
  if (!zs.b) return fail(why, "zfp: cannot open the bit stream");
  zfp_stream_set_bit_stream(zs.z, zs.b);
  zfp_stream_rewind(zs.z);
  size_t len = zfp_compress(zs.z, field.f);
  if (len == 0 || len > cap) return fail(why, "zfp: compression failed");
  // The stream without its trailing zero bytes (a reader decodes from a zero-padded copy):
  // the same bytes whatever word size the zfp library's bit stream uses.
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(buf.stream.data());
  while (len && bytes[len - 1] == 0) --len;

  const uint32_t param_bytes = kZfpFixedParamBytes + uint32_t(bits);
  out.assign(kBlockHeaderBytes + kStreamEntryBytes + param_bytes, '\0');
  unsigned char* p = reinterpret_cast<unsigned char*>(out.data());
  p[0] = uint8_t(Predictor::zfp);
  p[1] = uint8_t(Layout::whole);
  p[2] = 1;
  p[3] = uint8_t(param_bytes);
  p[kBlockHeaderBytes] = uint8_t(Coder::raw);
  put<uint32_t>(p + kBlockHeaderBytes + 4, uint32_t(len));
  unsigned char* param = p + kBlockHeaderBytes + kStreamEntryBytes;
  param[0] = ctx.zfp_hierarchical ? 1 : 0;
  param[1] = uint8_t(bits);
  std::memcpy(param + 2, &tol, 8);
  std::memcpy(param + kZfpFixedParamBytes, axes.data(), axes.size());
  out.append(reinterpret_cast<const char*>(buf.stream.data()), len);
  return true;
}

std::string decode_zfp(ValueType t, const unsigned char* p, size_t stored_n, void* dst, size_t n) {
  constexpr size_t head = kBlockHeaderBytes + kStreamEntryBytes;
  if (stored_n < head + kZfpFixedParamBytes) return "zfp block is shorter than its header and parameter";
  if (!t.is_float || (t.size != 4 && t.size != 8)) return "zfp block of values that are not f32 or f64";
  if (p[1] != uint8_t(Layout::whole)) return "zfp block with layout " + std::to_string(p[1]) + ", expected 0";
  if (p[2] != 1) return "zfp block has " + std::to_string(p[2]) + " streams, expected 1";
  const unsigned char* entry = p + kBlockHeaderBytes;
  if (entry[0] != uint8_t(Coder::raw)) return "zfp stream with coder " + std::to_string(entry[0]) + ", expected 0";
  if (entry[1] || entry[2] || entry[3]) return "stream entry 0 has nonzero reserved bytes";
  const unsigned char* param = p + head;
  const uint8_t flags = param[0], bits = param[1];
  if (flags > 1) return "zfp block with unknown flags " + std::to_string(flags);
  if (bits > kZfpMaxBits) return "zfp block of " + std::to_string(bits) + " Z-address bits (at most 20)";
  if (p[3] != kZfpFixedParamBytes + bits)
    return "predictor parameter has " + std::to_string(p[3]) + " bytes, expected " + std::to_string(kZfpFixedParamBytes + bits);
  if (n != size_t(1) << bits)
    return "zfp block of 2^" + std::to_string(bits) + " values, expected " + std::to_string(n);
  if (n * t.size > kMaxBlockBytes) return "block holds more than 1 MiB of values";
  double tol = 0;
  std::memcpy(&tol, param + 2, 8);
  if (!std::isfinite(tol) || !(tol > 0)) return "zfp block with a tolerance that is not a finite positive number";
  const size_t pos = head + p[3];
  if (pos > stored_n) return "coded block is shorter than its stream table";
  std::vector<uint8_t> axes(param + kZfpFixedParamBytes, param + kZfpFixedParamBytes + bits);
  std::string why;
  const ZfpBox* box = cached_box(flags == 1, axes, why);
  if (!box) return why;
  const size_t len = load<uint32_t>(entry + 4);
  if (len > stored_n - pos) return "stream 0 runs past the end of the block";
  if (pos + len != stored_n) return "coded block has " + std::to_string(stored_n - pos - len) + " trailing bytes";
  if (len && p[pos + len - 1] == 0) return "zfp stream ends with a zero byte";

  const bool f64 = t.size == 8;
  Buffers& buf = buffers();
  buf.lattice.assign((n * t.size + 7) / 8, 0);
  const Shape shape = shape_of(*box);
  FieldPtr field{make_field(buf.lattice.data(), f64, shape)};
  StreamPtr zs{zfp_stream_open(nullptr)};
  if (!field.f || !zs.z || !configure(zs.z, tol, f64, shape.nd)) return "zfp: cannot set up the stream";
  const size_t cap = zfp_stream_maximum_size(zs.z, field.f);
  if (len > cap) return "zfp stream of " + std::to_string(len) + " bytes, more than the " + std::to_string(cap) + " it can take";
  // zfp reads whole words of its bit stream and trusts the stream to end where its blocks
  // do: decode from a zero-padded copy that holds every bit the decoder can ask for (at
  // most block_max_bits per zfp block), so the stream's trailing zero bytes (dropped by the
  // writer) and any truncated or forged stream read zeros, not memory past the block.
  const size_t most_bits = zfp_field_blocks(field.f) * size_t(block_max_bits(f64, shape.nd));
  buf.stream.assign(std::max(len / 8, (most_bits + 63) / 64) + 2, 0);
  std::memcpy(buf.stream.data(), p + pos, len);
  zs.b = stream_open(buf.stream.data(), buf.stream.size() * 8);
  if (!zs.b) return "zfp: cannot open the bit stream";
  zfp_stream_set_bit_stream(zs.z, zs.b);
  zfp_stream_rewind(zs.z);
  const size_t used = zfp_decompress(zs.z, field.f);
  if (used == 0) return "zfp: decompression failed";
  if (used < len) return "zfp stream of " + std::to_string(len) + " bytes has bytes past its last block";
  if (f64) scatter(reinterpret_cast<const double*>(buf.lattice.data()), *box, n, static_cast<double*>(dst));
  else scatter(reinterpret_cast<const float*>(buf.lattice.data()), *box, n, static_cast<float*>(dst));
  return {};
}

double max_abs_error(ValueType t, const void* original, const void* decoded, size_t n) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (!t.is_float || (t.size != 4 && t.size != 8)) return inf;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double a, b;
    if (t.size == 8) {
      a = static_cast<const double*>(original)[i];
      b = static_cast<const double*>(decoded)[i];
    } else {
      a = static_cast<const float*>(original)[i];
      b = static_cast<const float*>(decoded)[i];
    }
    if (!std::isfinite(a) || !std::isfinite(b)) return inf;
    worst = std::max(worst, std::fabs(b - a));
  }
  return worst;
}

}  // namespace motes::codec
