// Binned words (Layout::binned, docs/format.md §4.12.2): quantile residuals in their bins'
// widths, a word found from its unit's bit offset and the widths of the words before it.
#include "motes/codec/packed.hpp"

#include <algorithm>
#include <cstring>

#include "motes/codec/bits.hpp"
#include "motes/codec/kernels.hpp"
#include "motes/core/bytes.hpp"

namespace motes::codec {

using namespace bits;

// Stream: u32 unit, 256 u8 widths, u32 bit offset per unit, the fields, 8 zero bytes.
void pack_binned(const unsigned char* words, const uint8_t* codes, size_t n, uint32_t size, std::string& out) {
  uint8_t width[256] = {};
  for (size_t i = 0; i < n; ++i)
    width[codes[i]] = std::max<uint8_t>(width[codes[i]], uint8_t(bits_for(word_at(words + i * size, size))));
  const size_t units = (n + kBinnedUnit - 1) / kBinnedUnit;
  const size_t start = out.size();
  out.append(4 + 256 + 4 * units, '\0');
  unsigned char* head = reinterpret_cast<unsigned char*>(out.data()) + start;
  store<uint32_t>(head, kBinnedUnit);
  std::memcpy(head + 4, width, 256);
  uint64_t bit = 0;
  for (size_t u = 0; u < units; ++u) {
    store<uint32_t>(reinterpret_cast<unsigned char*>(out.data()) + start + 260 + 4 * u, uint32_t(bit));
    for (size_t i = u * kBinnedUnit; i < std::min(n, (u + 1) * kBinnedUnit); ++i) bit += width[codes[i]];
  }
  const size_t at = out.size();
  out.resize(at + (bit + 7) / 8 + kPackedPadBytes + 8, '\0');
  unsigned char* p = reinterpret_cast<unsigned char*>(out.data()) + at;
  bit = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = width[codes[i]];
    if (!w) continue;
    const uint64_t v = word_at(words + i * size, size);
    const uint64_t byte = bit >> 3;
    const uint32_t sh = uint32_t(bit & 7);
    store<uint64_t>(p + byte, load<uint64_t>(p + byte) | (v << sh));
    if (sh + w > 64) p[byte + 8] = uint8_t(p[byte + 8] | (v >> (64 - sh)));
    bit += w;
  }
  out.resize(at + (bit + 7) / 8 + kPackedPadBytes);
}

std::string BinnedWords::open(const unsigned char* s, size_t len, size_t n, uint32_t size, bool checked) {
  if (len < 4 + 256 + kPackedPadBytes) return "binned stream is shorter than its header";
  const uint32_t unit = load<uint32_t>(s);
  if (unit < 64 || unit > 4096 || (unit & (unit - 1))) return "binned stream has a unit of " + std::to_string(unit) + " words";
  const size_t units = (n + unit - 1) / unit;
  if (units > (len - 260 - kPackedPadBytes) / 4) return "binned stream is shorter than its offset table";
  if (checked) {  // opened before: the widths, offsets and padding passed
    const size_t fields = 260 + 4 * units;
    widths_ = s + 4, offsets_ = s + 260, bits_ = s + fields, bit_count_ = uint64_t(len - fields - kPackedPadBytes) * 8;
    n_ = n, size_ = size, shift_ = uint32_t(__builtin_ctz(unit));
    return {};
  }
  for (size_t c = 0; c < 256; ++c)
    if (s[4 + c] > 8 * size) return "binned stream gives bin " + std::to_string(c) + " " + std::to_string(s[4 + c]) + " bits";
  const size_t fields = 260 + 4 * units;
  const uint64_t bit_count = uint64_t(len - fields - kPackedPadBytes) * 8;
  for (size_t u = 0; u < units; ++u)
    if (load<uint32_t>(s + 260 + 4 * u) > bit_count) return "binned unit " + std::to_string(u) + " starts past the stream";
  for (size_t i = len - kPackedPadBytes; i < len; ++i)
    if (s[i]) return "binned stream has a nonzero padding byte";
  widths_ = s + 4, offsets_ = s + 260, bits_ = s + fields, bit_count_ = bit_count;
  n_ = n, size_ = size, shift_ = uint32_t(__builtin_ctz(unit));
  return {};
}

bool BinnedWords::word(size_t i, const uint8_t* codes, uint64_t& out) const {
  const size_t u = i >> shift_, first = u << shift_, next = first + (size_t(1) << shift_);
  // The widths of the words between i and the nearer end of its unit, summed four side by
  // side (the loads do not wait on each other): from the unit's offset forwards, or back
  // from the next unit's.
  auto widths = [&](size_t a, size_t b) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; a + 4 <= b; a += 4)
      s0 += widths_[codes[a]], s1 += widths_[codes[a + 1]], s2 += widths_[codes[a + 2]], s3 += widths_[codes[a + 3]];
    for (; a < b; ++a) s0 += widths_[codes[a]];
    return s0 + s1 + s2 + s3;
  };
  uint64_t bit;
  if (next < n_ && next - i < i - first) {
    const uint64_t end = load<uint32_t>(offsets_ + 4 * (u + 1)), back = widths(i, next);
    if (back > end) return false;  // damaged
    bit = end - back;
  } else {
    bit = load<uint32_t>(offsets_ + 4 * u) + widths(first, i);
  }
  const uint32_t w = widths_[codes[i]];
  if (bit + w > bit_count_) return false;
  out = w ? field(bits_, bit, w) : 0;
  return true;
}

void BinnedWords::prefetch(size_t i, const uint8_t* codes) const {
  if (i >= n_) return;
  const size_t u = i >> shift_;
  __builtin_prefetch(codes + (u << shift_));  // the codes word(i) sums (a unit's: two lines at most)
  __builtin_prefetch(codes + i);
  // Its field: about where the unit's bits put it, between this unit's offset and the next's.
  const uint64_t lo = load<uint32_t>(offsets_ + 4 * u);
  const uint64_t hi = (u + 1) << shift_ < n_ ? load<uint32_t>(offsets_ + 4 * (u + 1)) : bit_count_;
  const uint64_t guess = hi > lo ? lo + (hi - lo) * (i - (u << shift_)) / (size_t(1) << shift_) : lo;
  if (guess / 8 < (bit_count_ + 7) / 8) {
    __builtin_prefetch(bits_ + guess / 8);
    __builtin_prefetch(bits_ + std::min<uint64_t>(guess / 8 + 64, (bit_count_ - 1) / 8));
  }
}

std::string BinnedWords::unpack(const uint8_t* codes, unsigned char* dst, const uint64_t* bases, const WordMap& map) const {
  return kernels::bins_unpacker(size_)(widths_, offsets_, shift_, codes, bits_, bit_count_, n_, bases, map, dst);
}

}  // namespace motes::codec
