#include "motes/codec/shuffle.hpp"

#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MOTES_X86 1
#endif

namespace motes::codec {

namespace {

void shuffle_scalar(const unsigned char* in, size_t first, size_t n, uint32_t size, unsigned char* const* planes) {
  for (size_t i = first; i < n; ++i)
    for (uint32_t k = 0; k < size; ++k) planes[k][i] = in[i * size + k];
}

void unshuffle_scalar(const unsigned char* const* planes, size_t first, size_t n, uint32_t size, unsigned char* out) {
  for (size_t i = first; i < n; ++i)
    for (uint32_t k = 0; k < size; ++k) out[i * size + k] = planes[k][i];
}

#ifdef MOTES_X86
inline __m128i load(const unsigned char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline void store(unsigned char* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

// Unshuffle: SSE2 unpack cascades, 16 elements per iteration.
size_t unshuffle2_sse2(const unsigned char* const* p, size_t n, unsigned char* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i a = load(p[0] + i), b = load(p[1] + i);
    store(out + 2 * i, _mm_unpacklo_epi8(a, b));
    store(out + 2 * i + 16, _mm_unpackhi_epi8(a, b));
  }
  return i;
}

size_t unshuffle4_sse2(const unsigned char* const* p, size_t n, unsigned char* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i a = load(p[0] + i), b = load(p[1] + i), c = load(p[2] + i), d = load(p[3] + i);
    __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
    __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
    unsigned char* o = out + 4 * i;
    store(o, _mm_unpacklo_epi16(ab0, cd0));
    store(o + 16, _mm_unpackhi_epi16(ab0, cd0));
    store(o + 32, _mm_unpacklo_epi16(ab1, cd1));
    store(o + 48, _mm_unpackhi_epi16(ab1, cd1));
  }
  return i;
}

size_t unshuffle8_sse2(const unsigned char* const* p, size_t n, unsigned char* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i pl[8];
    for (int k = 0; k < 8; ++k) pl[k] = load(p[k] + i);
    __m128i pair[8];  // words: bytes (2j, 2j+1) of elements 0-7 (even index) and 8-15 (odd index)
    for (int j = 0; j < 4; ++j) {
      pair[2 * j] = _mm_unpacklo_epi8(pl[2 * j], pl[2 * j + 1]);
      pair[2 * j + 1] = _mm_unpackhi_epi8(pl[2 * j], pl[2 * j + 1]);
    }
    // dwords: bytes 0-3 (lo) and 4-7 (hi) of elements 4h .. 4h+3
    __m128i lo[4], hi[4];
    for (int h = 0; h < 2; ++h) {
      lo[2 * h] = _mm_unpacklo_epi16(pair[h], pair[2 + h]);
      lo[2 * h + 1] = _mm_unpackhi_epi16(pair[h], pair[2 + h]);
      hi[2 * h] = _mm_unpacklo_epi16(pair[4 + h], pair[6 + h]);
      hi[2 * h + 1] = _mm_unpackhi_epi16(pair[4 + h], pair[6 + h]);
    }
    unsigned char* o = out + 8 * i;
    for (int q = 0; q < 4; ++q) {
      store(o + 32 * q, _mm_unpacklo_epi32(lo[q], hi[q]));
      store(o + 32 * q + 16, _mm_unpackhi_epi32(lo[q], hi[q]));
    }
  }
  return i;
}

// Shuffle: SSSE3 byte shuffles within a vector, then a transpose of lanes.
__attribute__((target("ssse3"))) size_t shuffle2_ssse3(const unsigned char* in, size_t n, unsigned char* const* p) {
  const __m128i m = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i v0 = _mm_shuffle_epi8(load(in + 2 * i), m), v1 = _mm_shuffle_epi8(load(in + 2 * i + 16), m);
    store(p[0] + i, _mm_unpacklo_epi64(v0, v1));
    store(p[1] + i, _mm_unpackhi_epi64(v0, v1));
  }
  return i;
}

__attribute__((target("ssse3"))) size_t shuffle4_ssse3(const unsigned char* in, size_t n, unsigned char* const* p) {
  const __m128i m = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const unsigned char* s = in + 4 * i;
    __m128i v0 = _mm_shuffle_epi8(load(s), m), v1 = _mm_shuffle_epi8(load(s + 16), m);
    __m128i v2 = _mm_shuffle_epi8(load(s + 32), m), v3 = _mm_shuffle_epi8(load(s + 48), m);
    __m128i t0 = _mm_unpacklo_epi32(v0, v1), t1 = _mm_unpackhi_epi32(v0, v1);
    __m128i t2 = _mm_unpacklo_epi32(v2, v3), t3 = _mm_unpackhi_epi32(v2, v3);
    store(p[0] + i, _mm_unpacklo_epi64(t0, t2));
    store(p[1] + i, _mm_unpackhi_epi64(t0, t2));
    store(p[2] + i, _mm_unpacklo_epi64(t1, t3));
    store(p[3] + i, _mm_unpackhi_epi64(t1, t3));
  }
  return i;
}

__attribute__((target("ssse3"))) size_t shuffle8_ssse3(const unsigned char* in, size_t n, unsigned char* const* p) {
  const __m128i m = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i r[8];  // r[j]: words w_k = byte k of elements 2j and 2j+1
    for (int j = 0; j < 8; ++j) r[j] = _mm_shuffle_epi8(load(in + 8 * i + 16 * j), m);
    __m128i s[8], u[8];
    for (int j = 0; j < 4; ++j) {
      s[2 * j] = _mm_unpacklo_epi16(r[2 * j], r[2 * j + 1]);
      s[2 * j + 1] = _mm_unpackhi_epi16(r[2 * j], r[2 * j + 1]);
    }
    for (int h = 0; h < 2; ++h) {  // h = 0: rows 0-3, h = 1: rows 4-7
      u[4 * h + 0] = _mm_unpacklo_epi32(s[4 * h], s[4 * h + 2]);
      u[4 * h + 1] = _mm_unpackhi_epi32(s[4 * h], s[4 * h + 2]);
      u[4 * h + 2] = _mm_unpacklo_epi32(s[4 * h + 1], s[4 * h + 3]);
      u[4 * h + 3] = _mm_unpackhi_epi32(s[4 * h + 1], s[4 * h + 3]);
    }
    for (int q = 0; q < 4; ++q) {
      store(p[2 * q] + i, _mm_unpacklo_epi64(u[q], u[4 + q]));
      store(p[2 * q + 1] + i, _mm_unpackhi_epi64(u[q], u[4 + q]));
    }
  }
  return i;
}

bool have_ssse3() {
  static const bool yes = __builtin_cpu_supports("ssse3");
  return yes;
}
#endif

// 8x8 bit matrix transpose: bit c of byte r moves to bit r of byte c (Hacker's Delight 7-3).
inline uint64_t transpose8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  return x ^ t ^ (t << 28);
}

// transpose8 of each of the m 8-byte words at p, in place (two at a time with SSE2).
void transpose8_all(unsigned char* p, size_t m) {
  size_t j = 0;
#ifdef MOTES_X86
  const __m128i m7 = _mm_set1_epi64x(0x00AA00AA00AA00AAll), m14 = _mm_set1_epi64x(0x0000CCCC0000CCCCll),
                m28 = _mm_set1_epi64x(0x00000000F0F0F0F0ll);
  for (; j + 2 <= m; j += 2) {
    __m128i x = load(p + 8 * j);
    __m128i t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, 7)), m7);
    x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, 7)));
    t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, 14)), m14);
    x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, 14)));
    t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, 28)), m28);
    x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, 28)));
    store(p + 8 * j, x);
  }
#endif
  for (; j < m; ++j) {
    uint64_t x;
    std::memcpy(&x, p + 8 * j, 8);
    x = transpose8(x);
    std::memcpy(p + 8 * j, &x, 8);
  }
}

std::vector<unsigned char>& bit_scratch(size_t bytes) {
  thread_local std::vector<unsigned char> tmp;
  if (tmp.size() < bytes) tmp.resize(bytes);
  return tmp;
}

}  // namespace

// Byte plane k's 8-value groups, each an 8x8 bit matrix, are transposed (byte b of the
// result: bit b of the 8 values), then byte-shuffled as 8-byte words into bit planes 8k..8k+7.
void bit_planes(const unsigned char* const* bytes, size_t n, uint32_t size, unsigned char* out) {
  const size_t m = (n + 7) / 8;
  std::vector<unsigned char>& tmp = bit_scratch(8 * m);
  for (uint32_t k = 0; k < size; ++k) {
    std::memcpy(tmp.data(), bytes[k], n);
    std::memset(tmp.data() + n, 0, 8 * m - n);
    transpose8_all(tmp.data(), m);
    unsigned char* dst[8];
    for (int b = 0; b < 8; ++b) dst[b] = out + (size_t(8) * k + b) * m;
    shuffle(tmp.data(), m, 8, dst);
  }
}

bool byte_planes(const unsigned char* bits, size_t n, uint32_t size, unsigned char* const* bytes) {
  const size_t m = (n + 7) / 8;
  std::vector<unsigned char>& tmp = bit_scratch(8 * m);
  for (uint32_t k = 0; k < size; ++k) {
    const unsigned char* src[8];
    for (int b = 0; b < 8; ++b) src[b] = bits + (size_t(8) * k + b) * m;
    unshuffle(src, m, 8, tmp.data());
    transpose8_all(tmp.data(), m);
    for (size_t i = n; i < 8 * m; ++i)
      if (tmp[i]) return false;  // a bit past the last value
    std::memcpy(bytes[k], tmp.data(), n);
  }
  return true;
}

void shuffle(const unsigned char* in, size_t n, uint32_t size, unsigned char* const* planes) {
  if (size == 1) {
    std::memcpy(planes[0], in, n);
    return;
  }
  size_t done = 0;
#ifdef MOTES_X86
  if (have_ssse3()) {
    if (size == 2) done = shuffle2_ssse3(in, n, planes);
    if (size == 4) done = shuffle4_ssse3(in, n, planes);
    if (size == 8) done = shuffle8_ssse3(in, n, planes);
  }
#endif
  shuffle_scalar(in, done, n, size, planes);
}

void unshuffle(const unsigned char* const* planes, size_t n, uint32_t size, unsigned char* out) {
  if (size == 1) {
    std::memcpy(out, planes[0], n);
    return;
  }
  size_t done = 0;
#ifdef MOTES_X86
  if (size == 2) done = unshuffle2_sse2(planes, n, out);
  if (size == 4) done = unshuffle4_sse2(planes, n, out);
  if (size == 8) done = unshuffle8_sse2(planes, n, out);
#endif
  unshuffle_scalar(planes, done, n, size, out);
}

}  // namespace motes::codec
