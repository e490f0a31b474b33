#include "motes/fields/hz.hpp"

#include <algorithm>
#include <cstring>

#include "motes/core/errors.hpp"

namespace motes::fields {

namespace {

int ceil_log2(uint64_t v) {
  int b = 0;
  while ((uint64_t(1) << b) < v) ++b;
  return b;
}

constexpr int kMaxBits = 48;  // 2^48 samples: far past any grid, and HZ indexes stay exact

}  // namespace

Bitmask Bitmask::guess(const Dims& dims, int ndim) {
  if (ndim < 1 || ndim > 3) throw UsageError("a grid has 1, 2 or 3 axes, not " + std::to_string(ndim));
  std::array<int, 3> left{};
  for (int a = 0; a < ndim; ++a) {
    if (dims[size_t(a)] == 0) throw UsageError("a grid axis has no samples");
    left[size_t(a)] = ceil_log2(dims[size_t(a)]);
  }
  // From the finest bit up: z, y, x in turn among the axes with bits left; then reversed.
  std::vector<int> fine_first;
  while (std::any_of(left.begin(), left.end(), [](int b) { return b > 0; }))
    for (int a = ndim - 1; a >= 0; --a)
      if (left[size_t(a)] > 0) fine_first.push_back(a), --left[size_t(a)];
  Bitmask m;
  m.ndim_ = ndim;
  m.axes_.assign(fine_first.rbegin(), fine_first.rend());
  for (int a : m.axes_) ++m.bits_[size_t(a)];
  if (m.maxh() > kMaxBits) throw UsageError("a grid of more than 2^48 samples (padded to powers of two) is not supported");
  return m;
}

Bitmask Bitmask::parse(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return FormatError("bitmask '" + std::string(text.substr(0, 80)) + "': " + why);
  };
  if (text.empty() || text[0] != 'V') throw bad("does not start with V");
  Bitmask m;
  for (char c : text.substr(1)) {
    if (c < '0' || c > '2') throw bad("has a digit other than 0, 1, 2 (axes x, y, z)");
    m.axes_.push_back(c - '0');
    m.ndim_ = std::max(m.ndim_, c - '0' + 1);
  }
  if (m.axes_.empty()) m.ndim_ = 1;
  if (m.maxh() > kMaxBits) throw bad("has more than 48 bits");
  for (int a : m.axes_) ++m.bits_[size_t(a)];
  return m;
}

std::string Bitmask::text() const {
  std::string s = "V";
  for (int a : axes_) s += char('0' + a);
  return s;
}

Dims Bitmask::pow2_dims() const {
  Dims d{1, 1, 1};
  for (int a = 0; a < 3; ++a) d[size_t(a)] = uint64_t(1) << bits_[size_t(a)];
  return d;
}

std::array<int, 3> Bitmask::stride_bits(int resolution) const {
  if (resolution < 0 || resolution > maxh())
    throw UsageError("resolution " + std::to_string(resolution) + " is outside [0, " + std::to_string(maxh()) + "]");
  std::array<int, 3> s{};
  for (int p = resolution + 1; p <= maxh(); ++p) ++s[size_t(axis(p))];
  return s;
}

int Bitmask::levels() const { return *std::max_element(bits_.begin(), bits_.end()); }

int Bitmask::resolution_of_level(int k) const {
  if (k < 0) throw UsageError("level " + std::to_string(k) + " is negative");
  k = std::min(k, levels());
  int drop = 0;
  for (int a = 0; a < ndim_; ++a) drop += std::min(k, bits_[size_t(a)]);
  const int r = maxh() - drop;
  const std::array<int, 3> s = stride_bits(r);
  for (int a = 0; a < ndim_; ++a)
    if (s[size_t(a)] != std::min(k, bits_[size_t(a)]))
      throw UsageError("bitmask " + text() + " has no resolution holding every 2^" + std::to_string(k) +
                       "-th sample along each axis (its finest bits are not regular)");
  return r;
}

HzOrder::HzOrder(const Bitmask& bitmask) : bitmask_(bitmask), maxh_(bitmask.maxh()) {
  // Bit p (1 = coarsest) of the bitmask is Z bit maxh - p; along each axis, the finest
  // Z bit of that axis is its coordinate bit 0.
  std::array<std::vector<int>, 3> zbit_of;  // per axis, per coordinate bit: its Z bit
  for (int p = maxh_; p >= 1; --p) zbit_of[size_t(bitmask.axis(p))].push_back(maxh_ - p);
  for (size_t a = 0; a < 3; ++a) {
    const size_t bytes = (zbit_of[a].size() + 7) / 8;
    spread_[a].assign(std::max<size_t>(bytes, 1), {});
    for (size_t byte = 0; byte < bytes; ++byte)
      for (uint32_t v = 0; v < 256; ++v) {
        uint64_t z = 0;
        for (size_t bit = 0; bit < 8; ++bit) {
          size_t cb = byte * 8 + bit;
          if ((v >> bit) & 1 && cb < zbit_of[a].size()) z |= uint64_t(1) << zbit_of[a][cb];
        }
        spread_[a][byte][v] = z;
      }
  }
  // Z bit j -> (axis, coordinate bit).
  std::vector<std::pair<int, int>> coord_of(static_cast<size_t>(maxh_));
  for (size_t a = 0; a < 3; ++a)
    for (size_t cb = 0; cb < zbit_of[a].size(); ++cb) coord_of[size_t(zbit_of[a][cb])] = {int(a), int(cb)};
  gather_.assign(std::max<size_t>((size_t(maxh_) + 7) / 8, 1), {});
  for (size_t byte = 0; byte < gather_.size(); ++byte)
    for (uint32_t v = 0; v < 256; ++v) {
      std::array<uint32_t, 3> c{};
      for (size_t bit = 0; bit < 8; ++bit) {
        size_t j = byte * 8 + bit;
        if ((v >> bit) & 1 && j < size_t(maxh_)) c[size_t(coord_of[j].first)] |= uint32_t(1) << coord_of[j].second;
      }
      gather_[byte][v] = c;
    }
}

Dims HzOrder::point_of_z(uint64_t zaddr) const {
  Dims p{0, 0, 0};
  for (size_t byte = 0; zaddr; ++byte, zaddr >>= 8) {
    const auto& c = gather_[byte][zaddr & 0xff];
    p[0] |= c[0], p[1] |= c[1], p[2] |= c[2];
  }
  return p;
}

namespace {

template <size_t S>
void copy_sample(const unsigned char* from, unsigned char* to) {
  std::memcpy(to, from, S);
}

using Copier = void (*)(const unsigned char*, unsigned char*);

Copier copier_for(size_t size) {
  switch (size) {
    case 1: return copy_sample<1>;
    case 2: return copy_sample<2>;
    case 4: return copy_sample<4>;
    case 8: return copy_sample<8>;
    default: throw UsageError("sample size " + std::to_string(size) + " is not 1, 2, 4 or 8 bytes");
  }
}

}  // namespace

void HzOrder::gather(const void* src, const Dims& dims, size_t size, uint64_t first, uint64_t count, void* dst,
                     uint8_t* inside) const {
  const Copier copy = copier_for(size);
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  const uint64_t row = dims[0], plane = dims[0] * dims[1];
  for (uint64_t i = 0; i < count; ++i) {
    const Dims p = point_of_hz(first + i);
    unsigned char* o = out + i * size;
    const bool in_grid = p[0] < dims[0] && p[1] < dims[1] && p[2] < dims[2];
    if (in_grid)
      copy(in + (p[2] * plane + p[1] * row + p[0]) * size, o);
    else
      std::memset(o, 0, size);
    if (inside) inside[i] = in_grid;
  }
}

uint64_t HzOrder::scatter(const void* src, size_t size, uint64_t first, uint64_t count, const Dims& lo,
                          const Dims& hi, const std::array<int, 3>& stride_bits, const Dims& out_first,
                          const Dims& out_dims, void* out) const {
  const Copier copy = copier_for(size);
  const auto* in = static_cast<const unsigned char*>(src);
  auto* o = static_cast<unsigned char*>(out);
  const uint64_t row = out_dims[0], plane = out_dims[0] * out_dims[1];
  std::array<uint64_t, 3> mask{};
  for (size_t a = 0; a < 3; ++a) mask[a] = (uint64_t(1) << stride_bits[a]) - 1;
  uint64_t written = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const Dims p = point_of_hz(first + i);
    bool keep = true;
    for (size_t a = 0; a < 3; ++a) keep &= p[a] >= lo[a] && p[a] < hi[a] && (p[a] & mask[a]) == 0;
    if (!keep) continue;
    const uint64_t x = (p[0] >> stride_bits[0]) - out_first[0], y = (p[1] >> stride_bits[1]) - out_first[1],
                   z = (p[2] >> stride_bits[2]) - out_first[2];
    copy(in + i * size, o + (z * plane + y * row + x) * size);
    ++written;
  }
  return written;
}

BlockOffsets::BlockOffsets(const HzOrder& order, int block_bits, uint64_t row, uint64_t plane,
                           const std::array<int, 3>& shift, int max_level)
    : tables_(size_t(std::max(max_level, 0) + 1)), extents_(size_t(std::max(max_level, 0) + 1), Dims{0, 0, 0}) {
  const uint64_t B = uint64_t(1) << block_bits;
  for (int h = block_bits + 1; h <= max_level; ++h) {
    std::vector<int64_t>& t = tables_[size_t(h)];
    t.resize(B);
    const int up = order.maxh() - h + 1;
    for (uint64_t i = 0; i < B; ++i) {
      const Dims q = order.point_of_z(i << up);
      t[i] = int64_t((q[0] >> shift[0]) + (q[1] >> shift[1]) * row + (q[2] >> shift[2]) * plane);
    }
    extents_[size_t(h)] = order.point_of_z((B - 1) << up);
  }
}

namespace {

template <class T>
void gather_fast(const T* src, const int64_t* off, uint64_t n, T* dst) {
  for (uint64_t i = 0; i < n; ++i) dst[i] = src[off[i]];
}

template <class T>
void scatter_fast(const T* src, const int64_t* off, uint64_t n, T* dst) {
  for (uint64_t i = 0; i < n; ++i) dst[off[i]] = src[i];
}

template <template <class> class F, class... A>
void by_size(size_t size, A... args) {
  switch (size) {
    case 1: return F<uint8_t>::run(args...);
    case 2: return F<uint16_t>::run(args...);
    case 4: return F<uint32_t>::run(args...);
    case 8: return F<uint64_t>::run(args...);
    default: throw UsageError("sample size " + std::to_string(size) + " is not 1, 2, 4 or 8 bytes");
  }
}

template <class T>
struct Gather {
  static void run(const void* src, int64_t base, const int64_t* off, uint64_t n, void* dst) {
    gather_fast(static_cast<const T*>(src) + base, off, n, static_cast<T*>(dst));
  }
};
template <class T>
struct Scatter {
  static void run(const void* src, int64_t base, const int64_t* off, uint64_t n, void* dst) {
    scatter_fast(static_cast<const T*>(src), off, n, static_cast<T*>(dst) + base);
  }
};

}  // namespace

void gather_block(const HzOrder& order, const BlockOffsets& offsets, int block_bits, uint64_t b, const void* src,
                  const Dims& dims, size_t size, void* dst, uint8_t* inside) {
  const uint64_t B = uint64_t(1) << block_bits, first = b * B;
  const int h = b ? level_of_hz(first) : 0;
  if (b == 0 || h <= block_bits) return order.gather(src, dims, size, first, B, dst, inside);
  const Dims p = order.point_of_hz(first), e = offsets.extent(h);
  for (size_t a = 0; a < 3; ++a)
    if (p[a] + e[a] >= dims[a]) return order.gather(src, dims, size, first, B, dst, inside);
  const int64_t base = int64_t(p[0] + p[1] * dims[0] + p[2] * dims[0] * dims[1]);
  by_size<Gather>(size, src, base, offsets.offsets(h).data(), B, dst);
  if (inside) std::memset(inside, 1, B);
}

uint64_t scatter_block(const HzOrder& order, const BlockOffsets* offsets, int block_bits, const void* src, size_t size,
                       uint64_t first, uint64_t count, const Dims& lo, const Dims& hi,
                       const std::array<int, 3>& stride_bits, const Dims& out_first, const Dims& out_dims, void* out) {
  const uint64_t B = uint64_t(1) << block_bits;
  const bool whole = offsets && first % B == 0 && count == B && first >= B;
  if (whole) {
    const int h = level_of_hz(first);
    const Dims p = order.point_of_hz(first), e = offsets->extent(h);
    bool inside = true;
    for (size_t a = 0; a < 3; ++a) inside &= p[a] >= lo[a] && p[a] + e[a] < hi[a];
    if (inside) {
      const int64_t base = int64_t(((p[0] >> stride_bits[0]) - out_first[0]) +
                                   ((p[1] >> stride_bits[1]) - out_first[1]) * out_dims[0] +
                                   ((p[2] >> stride_bits[2]) - out_first[2]) * out_dims[0] * out_dims[1]);
      by_size<Scatter>(size, src, base, offsets->offsets(h).data(), B, out);
      return B;
    }
  }
  return order.scatter(src, size, first, count, lo, hi, stride_bits, out_first, out_dims, out);
}

std::vector<uint64_t> blocks_for_box(const HzOrder& order, int block_bits, int resolution, const Dims& lo,
                                     const Dims& hi) {
  std::vector<uint64_t> out;
  for (size_t a = 0; a < 3; ++a)
    if (lo[a] >= hi[a]) return out;
  if (resolution < 0 || resolution > order.maxh())
    throw UsageError("resolution " + std::to_string(resolution) + " is outside [0, " + std::to_string(order.maxh()) +
                     "]");
  out.push_back(0);  // levels 0..block_bits: the coarsest samples, spread over the whole grid
  const uint64_t B = uint64_t(1) << block_bits;
  for (int h = block_bits + 1; h <= resolution; ++h) {
    // Level h is HZ [2^(h-1), 2^h): whole blocks, each an aligned box of the level's lattice.
    const uint64_t b0 = (uint64_t(1) << (h - 1)) >> block_bits, b1 = (uint64_t(1) << h) >> block_bits;
    for (uint64_t b = b0; b < b1; ++b) {
      const Dims first = order.point_of_hz(b * B), last = order.point_of_hz((b + 1) * B - 1);
      bool meets = true;
      for (size_t a = 0; a < 3; ++a) meets &= first[a] < hi[a] && last[a] >= lo[a];
      if (meets) out.push_back(b);
    }
  }
  return out;
}

BlockLattice block_lattice(const HzOrder& order, int block_bits, uint64_t block) {
  const Bitmask& m = order.bitmask();
  if (block_bits < 0 || block_bits > order.maxh())
    throw UsageError("block bits " + std::to_string(block_bits) + " is outside [0, " + std::to_string(order.maxh()) +
                     "] (the bitmask " + m.text() + ")");
  const uint64_t blocks = uint64_t(1) << (order.maxh() - block_bits);
  if (block >= blocks)
    throw UsageError("block " + std::to_string(block) + " is past the last of bitmask " + m.text() + " (" +
                     std::to_string(blocks) + " blocks of 2^" + std::to_string(block_bits) + " samples)");
  BlockLattice l;
  if (block == 0) {
    l.step_bits = m.stride_bits(block_bits);
    const Dims p2 = m.pow2_dims();
    for (size_t a = 0; a < 3; ++a) l.count[a] = p2[a] >> l.step_bits[a];
    return l;
  }
  const int h = block_bits + 64 - __builtin_clzll(block);  // block in [2^(h-1-bb), 2^(h-bb))
  l.step_bits = m.stride_bits(h);
  ++l.step_bits[size_t(m.axis(h))];
  l.first = order.point_of_hz(block << block_bits);
  const Dims last = order.point_of_hz(((block + 1) << block_bits) - 1);
  for (size_t a = 0; a < 3; ++a) l.count[a] = ((last[a] - l.first[a]) >> l.step_bits[a]) + 1;
  return l;
}

}  // namespace motes::fields
