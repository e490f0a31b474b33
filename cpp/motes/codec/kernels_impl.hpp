// The kernels of kernels.hpp, included by kernels.cpp once per instruction set inside a
// namespace of its own (so no include guard, and no includes: kernels.cpp includes what
// they use before). Each defines for_unpacker_at(), dict_unpacker_at() and bins_unpacker_at().
// NOLINTBEGIN(build/namespaces)

// Unpacks m fields of W bits (a constant: the compiler unrolls each group of 8) plus ref.
template <class U, uint32_t W>
void unpack_for(const unsigned char* p, size_t m, uint64_t ref, unsigned char* dst) {
  U* out = reinterpret_cast<U*>(dst);
  size_t i = 0;
  if constexpr (W == 0) {
    for (; i < m; ++i) store<U>(out + i, U(ref));
  } else {
    for (; i + 8 <= m; i += 8, p += W) {  // 8 fields of W bits are W bytes
#pragma GCC unroll 8
      for (uint32_t j = 0; j < 8; ++j) store<U>(out + i + j, U(ref + field(p, j * W, W)));
    }
    for (uint32_t j = 0; i < m; ++i, ++j) store<U>(out + i, U(ref + field(p, j * W, W)));
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

// A dictionary unit of m fields of W bits (W <= 8) with no low bits: word j = dict[field j]
// (d words of U at `dict`, d <= 2^W as the stream's check makes sure); false when a field
// indexes past them.
template <class U, uint32_t W>
bool unpack_dict(const unsigned char* p, size_t m, const unsigned char* dict, uint32_t d, unsigned char* dst) {
  if (d > (uint32_t(1) << W)) return false;
  U table[size_t(1) << W] = {};
  for (uint32_t k = 0; k < d; ++k) table[k] = load<U>(dict + k * sizeof(U));
  U* out = reinterpret_cast<U*>(dst);
  uint64_t past = 0;  // fields at or past d, or-ed (checked once, after the loop)
  size_t i = 0;
  if constexpr (W > 0) {
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
    const uint64_t x = W ? field(p, j * W, W) : 0;
    past |= x >= d;
    store<U>(out + i, table[x]);
  }
  return !past;
}

template <class U, size_t... W>
constexpr std::array<DictUnpacker, sizeof...(W)> dict_unpackers(std::index_sequence<W...>) {
  return {&unpack_dict<U, uint32_t(W)>...};
}
inline DictUnpacker dict_unpacker_at(uint32_t size, uint32_t w) {
  return words::with_word(size, [w](auto z) {  // widths 0 .. 8
    static constexpr auto table = dict_unpackers<decltype(z)>(std::make_index_sequence<9>{});
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

// A WordMap's masks cut to U, applied in the inner loop.
template <class U>
struct Unorder {
  U when_clear, always;
  explicit Unorder(const WordMap& m) : when_clear(U(m.when_clear)), always(U(m.always)) {}
  U operator()(U v) const { return U(v ^ ((U(U(v >> (8 * sizeof(U) - 1)) - 1) & when_clear) | always)); }
};

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
      for (size_t i = first; i < end; ++i) {
        const uint8_t c = codes[i];
        store<U>(out + i, f(U(take<U>(bits, bit, widths[c]) + U(bases[c]))));
      }
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
