// The kernels of kernels.hpp, included by kernels.cpp once per instruction set inside a
// namespace of its own (so no include guard, and no includes: kernels.cpp includes what
// they use before). Each defines for_unpacker_at(), dict_unpacker_at() and bins_unpacker_at().
// MOTES_KERNELS_AVX2 (the x86-64-v3 copy) adds the forms written with AVX2 intrinsics.
// NOLINTBEGIN(build/namespaces)

#ifdef MOTES_KERNELS_AVX2
// 8 fields of W <= 32 bits (W bytes) in one 256-bit register: the low 128-bit lane holds the
// bytes of fields 0-3, the high one those of fields 4-7 (loaded from byte 4W / 8), a byte
// shuffle puts the 4 bytes from each field's first byte in its 32-bit lane, a shift per lane
// aligns it. A field whose shift and width pass 32 bits (W = 27, 29-31 and some fields of 30)
// takes its top bits from its fifth byte: a second shuffle puts that byte in the lane, shifted
// up by 32 - shift (only for widths that have such fields; W <= 26, 28 and 32 never do).
template <uint32_t W>
struct Spread8 {
  static constexpr uint32_t high = 4 * W / 8;  // the high lane's first byte
  bool fifth = false;                          // some field needs its fifth byte
  alignas(32) uint8_t shuffle[32] = {};
  alignas(32) uint8_t shuffle5[32] = {};  // the fifth bytes (0x80: a zero byte)
  alignas(32) uint32_t shift[8] = {};
  alignas(32) uint32_t shift5[8] = {};
  constexpr Spread8() {
    for (uint32_t j = 0; j < 8; ++j) {
      const uint32_t byte = j * W / 8 - (j < 4 ? 0 : high);  // <= 12: 4 bytes fit the lane
      for (uint32_t k = 0; k < 4; ++k) shuffle[4 * j + k] = uint8_t(byte + k), shuffle5[4 * j + k] = 0x80;
      shift[j] = j * W % 8;
      if (shift[j] + W > 32) fifth = true, shuffle5[4 * j] = uint8_t(byte + 4);  // <= 15: the field ends in the lane
      shift5[j] = 32 - shift[j];
    }
  }
};

// Calls each(fields, g) for every whole group g of 8 of m fields of W bits from p, the group's
// fields one per 32-bit lane; the last groups, whose loads (high + 16 bytes from a group's
// start) could pass the 8 bytes of padding after the fields, from a zero-padded copy. Returns
// the fields done (m rounded down to a multiple of 8; the rest are the caller's).
template <uint32_t W, class Each>
[[gnu::always_inline]] inline size_t spread8_all(const unsigned char* p, size_t m, Each each) {
  static_assert(W >= 1 && W <= 32);
  static constexpr Spread8<W> s{};
  const __m256i shuffle = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.shuffle));
  const __m256i shift = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.shift));
  const __m256i shuffle5 = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.shuffle5));
  const __m256i shift5 = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.shift5));
  const __m256i mask = _mm256_set1_epi32(int(uint32_t(mask_of(W))));
  auto spread = [&](const unsigned char* q) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + s.high));
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    __m256i f = _mm256_srlv_epi32(_mm256_shuffle_epi8(v, shuffle), shift);
    if constexpr (s.fifth) f = _mm256_or_si256(f, _mm256_sllv_epi32(_mm256_shuffle_epi8(v, shuffle5), shift5));
    if constexpr (W < 32) f = _mm256_and_si256(f, mask);
    return f;
  };
  const size_t whole = m / 8, bytes = (m * W + 7) / 8;
  const size_t safe =
      bytes + kPackedPadBytes < s.high + 16 ? 0 : std::min(whole, (bytes + kPackedPadBytes - s.high - 16) / W + 1);
  size_t g = 0;
  for (; g < safe; ++g) each(spread(p + g * W), g);
  if (g < whole) {  // groups of fewer than high + 8 bytes in all: loads within 2 high + 24 <= 56 bytes
    unsigned char copy[96] = {};
    std::memcpy(copy, p + g * W, (whole - g) * W);
    for (const unsigned char* q = copy; g < whole; ++g, q += W) each(spread(q), g);
  }
  return 8 * whole;
}
// unordered() through a WordMap, 8 lanes: v ^ ((~(v >> 31, arithmetic) & when_clear) | always).
inline __m256i unorder8(__m256i v, __m256i when_clear, __m256i always) {
  return _mm256_xor_si256(v, _mm256_or_si256(_mm256_andnot_si256(_mm256_srai_epi32(v, 31), when_clear), always));
}

// Fields of W <= 32 bits as 32-bit words, 8 at a time, each plus ref through the map; returns
// the fields unpacked (a multiple of 8; the rest are the caller's).
template <uint32_t W>
size_t unpack_for_avx2(const unsigned char* p, size_t m, uint32_t ref, const WordMap& map, uint32_t* out) {
  const __m256i add = _mm256_set1_epi32(int(ref));
  const __m256i when_clear = _mm256_set1_epi32(int(uint32_t(map.when_clear)));
  const __m256i always = _mm256_set1_epi32(int(uint32_t(map.always)));
  return spread8_all<W>(p, m, [&](__m256i v, size_t g) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * g), unorder8(_mm256_add_epi32(v, add), when_clear, always));
  });
}

// Dictionary fields of W <= 32 bits as 32-bit words, 8 at a time: table[field >> r] (a table
// of 256, entries 0-7 at least set) or-ed with the field's r low bits, plus `plus` through the
// map; indexes at or past d are or-ed into `past`. Returns the fields unpacked (a multiple of 8).
// Plain: r = 0 and the table holds the words as they end (no bits, no addition, no map).
template <uint32_t W, bool Plain>
size_t unpack_dict_avx2(const unsigned char* p, size_t m, const uint32_t* table, uint32_t d, uint32_t r, uint32_t plus,
                        const WordMap& map, uint32_t* out, uint64_t& past) {
  const __m256i low = _mm256_set1_epi32(int(uint32_t(mask_of(r)))), add = _mm256_set1_epi32(int(plus));
  const __m256i last = _mm256_set1_epi32(int(d) - 1);
  const __m256i when_clear = _mm256_set1_epi32(int(uint32_t(map.when_clear)));
  const __m256i always = _mm256_set1_epi32(int(uint32_t(map.always)));
  const __m128i rs = _mm_cvtsi32_si128(int(r));
  const __m256i small = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table));  // entries 0-7
  const bool few = W - r <= 3;  // indexes below 8: a permute of `small`, not a gather
  __m256i over = _mm256_setzero_si256();
  const size_t done = spread8_all<W>(p, m, [&](__m256i v, size_t g) {
    const __m256i x = Plain ? v : _mm256_srl_epi32(v, rs);
    over = _mm256_or_si256(over, _mm256_cmpgt_epi32(x, last));
    __m256i t;
    if (W <= 3 || few) t = _mm256_permutevar8x32_epi32(small, x);  // (the branch is the same for every group)
    else t = _mm256_i32gather_epi32(reinterpret_cast<const int*>(table), x, 4);
    if constexpr (!Plain) t = unorder8(_mm256_add_epi32(_mm256_or_si256(t, _mm256_and_si256(v, low)), add), when_clear, always);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * g), t);
  });
  past |= uint64_t(!_mm256_testz_si256(over, over));
  return done;
}
#endif

// Unpacks m fields of W bits (a constant: the compiler unrolls each group of 8), each plus ref
// through the map.
template <class U, uint32_t W>
void unpack_for(const unsigned char* p, size_t m, uint64_t ref, const WordMap& map, unsigned char* dst) {
  const Unorder<U> f(map);
  U* out = reinterpret_cast<U*>(dst);
  size_t i = 0;
  if constexpr (W == 0) {
    const U v = f(U(ref));
    for (; i < m; ++i) store<U>(out + i, v);
  } else {
#ifdef MOTES_KERNELS_AVX2
    if constexpr (sizeof(U) == 4 && W <= 32) {
      i = unpack_for_avx2<W>(p, m, uint32_t(ref), map, out);
      p += i / 8 * W;
    }
#endif
    for (; i + 8 <= m; i += 8, p += W) {  // 8 fields of W bits are W bytes
#pragma GCC unroll 8
      for (uint32_t j = 0; j < 8; ++j) store<U>(out + i + j, f(U(ref + field(p, j * W, W))));
    }
    for (uint32_t j = 0; i < m; ++i, ++j) store<U>(out + i, f(U(ref + field(p, j * W, W))));
  }
}

template <class U, size_t... W>
constexpr std::array<ForUnpacker, sizeof...(W)> for_unpackers(std::index_sequence<W...>) {
  return {&unpack_for<U, uint32_t(W)>...};
}
inline ForUnpacker for_unpacker_at(uint32_t size, uint32_t w) {
  return words::with_word(size, [w](auto z) {  // widths 0 .. 8 * size
    static constexpr auto table = for_unpackers<decltype(z)>(std::make_index_sequence<8 * sizeof(z) + 1>{});
    return table[w];
  });
}

// A dictionary unit of m fields of W bits, each a dictionary index (its high W - r <= 8
// bits) and r low bits: word j = (dict[index] << r | low bits) plus add through the map (d
// words of U at `dict`); false when an index is past them (checked once, after the loop).
template <class U, uint32_t W>
bool unpack_dict(const unsigned char* p, size_t m, const unsigned char* dict, uint32_t d, uint32_t r, uint64_t add,
                 const WordMap& map, unsigned char* dst) {
  if (r > W || W - r > 8 || d > (uint32_t(1) << (W - r))) return false;
  const Unorder<U> f(map);
  U table[256];
  const uint32_t entries = std::max(uint32_t(1) << (W - r), uint32_t(8));  // 8: a register's worth (AVX2)
  U* out = reinterpret_cast<U*>(dst);
  uint64_t past = 0;  // indexes at or past d, or-ed
  size_t i = 0;
  if (r == 0) {  // a plain dictionary (a few distinct words): the table holds the words as they end
    for (uint32_t k = 0; k < entries; ++k) table[k] = k < d ? f(U(load<U>(dict + k * sizeof(U)) + add)) : U(0);
#ifdef MOTES_KERNELS_AVX2
    if constexpr (sizeof(U) == 4 && W >= 1 && W <= 8) {
      i = unpack_dict_avx2<W, true>(p, m, table, d, 0, 0, WordMap{}, out, past);
      p += i / 8 * W;
    }
#endif
    if constexpr (W > 0 && W <= 8) {
      for (; i + 8 <= m; i += 8, p += W) {
#pragma GCC unroll 8
        for (uint32_t j = 0; j < 8; ++j) {
          const uint64_t x = field(p, j * W, W);
          past |= x >= d;
          store<U>(out + i + j, table[x]);
        }
      }
    }
    for (uint32_t j = 0; i < m; ++i, ++j) {
      const uint64_t x = W ? field(p, j * W, W) & 255 : 0;
      past |= x >= d;
      store<U>(out + i, table[x]);
    }
    return !past;
  }
  // High parts with r low bits (the sign and exponent of floats that cross zero).
  for (uint32_t k = 0; k < entries; ++k) table[k] = k < d ? U(load<U>(dict + k * sizeof(U)) << r) : U(0);
  const U low = U(mask_of(r)), plus = U(add);
#ifdef MOTES_KERNELS_AVX2
  if constexpr (sizeof(U) == 4 && W >= 1 && W <= 32) {
    i = unpack_dict_avx2<W, false>(p, m, table, d, r, uint32_t(add), map, out, past);
    p += i / 8 * W;
  }
#endif
  if constexpr (W > 0) {
    for (; i + 8 <= m; i += 8, p += W) {
#pragma GCC unroll 8
      for (uint32_t j = 0; j < 8; ++j) {
        const uint64_t v = field(p, j * W, W);
        const uint64_t x = (v >> r) & 255;
        past |= x >= d;
        store<U>(out + i + j, f(U((table[x] | (U(v) & low)) + plus)));
      }
    }
  }
  for (uint32_t j = 0; i < m; ++i, ++j) {
    const uint64_t v = W ? field(p, j * W, W) : 0;
    const uint64_t x = (v >> r) & 255;
    past |= x >= d;
    store<U>(out + i, f(U((table[x] | (U(v) & low)) + plus)));
  }
  return !past;
}

template <class U, size_t... W>
constexpr std::array<DictUnpacker, sizeof...(W)> dict_unpackers(std::index_sequence<W...>) {
  return {&unpack_dict<U, uint32_t(W)>...};
}
inline DictUnpacker dict_unpacker_at(uint32_t size, uint32_t w) {
  return words::with_word(size, [w](auto z) {  // widths 0 .. 8 * size
    static constexpr auto table = dict_unpackers<decltype(z)>(std::make_index_sequence<8 * sizeof(z) + 1>{});
    return table[w];
  });
}

// A word of w bits at `bit` of the fields, and where the next begins. Words of up to 32 bits
// take one 8-byte load whatever their shift; wider ones may take a ninth byte.
template <class U>
inline U take(const unsigned char* bits, uint64_t& bit, uint32_t w) {
  uint64_t v;
  if constexpr (sizeof(U) <= 4) {
    v = (load<uint64_t>(bits + (bit >> 3)) >> (bit & 7)) & ((uint64_t(1) << w) - 1);
  } else {
    v = w ? field(bits, bit, w) : 0;
  }
  bit += w;
  return U(v);
}

template <class U>
std::string unpack_bins(const unsigned char* widths, const unsigned char* offsets, uint32_t shift, const uint8_t* codes,
                        const unsigned char* bits, uint64_t bit_count, size_t n, const uint64_t* bases,
                        const WordMap& map, unsigned char* dst) {
  const Unorder<U> f(map);
  const size_t unit = size_t(1) << shift;
  U* out = reinterpret_cast<U*>(dst);
  uint64_t bit = 0;
  for (size_t u = 0; u * unit < n; ++u) {
    if (load<uint32_t>(offsets + 4 * u) != bit) return "binned unit " + std::to_string(u) + " does not start where the one before ends";
    const size_t first = u * unit, end = std::min(n, first + unit);
    if (bit + (end - first) * 8 * sizeof(U) <= bit_count) {  // the unit's words lie in the stream whatever their widths
      // The fields plus their bases, then the map over the unit (cached; a loop the compiler
      // vectorizes): fewer instructions per value than the map in the serial loop.
      for (size_t i = first; i < end; ++i) {
        const uint8_t c = codes[i];
        store<U>(out + i, U(take<U>(bits, bit, widths[c]) + U(bases[c])));
      }
      for (size_t i = first; i < end; ++i) out[i] = f(out[i]);
    } else {
      for (size_t i = first; i < end; ++i) {
        const uint8_t c = codes[i];
        if (bit + widths[c] > bit_count) return "binned words run past the stream";
        store<U>(out + i, f(U(take<U>(bits, bit, widths[c]) + U(bases[c]))));
      }
    }
  }
  if ((bit + 7) / 8 != bit_count / 8) return "binned stream's fields do not end where the stream ends";
  if (bit % 8 && (bits[bit / 8] >> (bit % 8))) return "binned stream has bits set after its last word";
  return {};
}

inline BinsUnpacker bins_unpacker_at(uint32_t size) {
  return words::with_word(size, [](auto z) -> BinsUnpacker { return &unpack_bins<decltype(z)>; });
}
// NOLINTEND(build/namespaces)
