#include "motes/codec/packed.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "motes/codec/bits.hpp"
#include "motes/codec/kernels.hpp"
#include "motes/codec/words.hpp"
#include "motes/core/bytes.hpp"
#include "motes/core/cpu.hpp"

namespace motes::codec {

using namespace bits;

namespace {

constexpr uint8_t kFor = 0, kDictionary = 1, kLinear = 2;
// The header words of a unit's body before its fields.
size_t head_words(uint8_t mode, uint32_t dict_size) { return mode == kFor ? 1 : mode == kLinear ? 2 : dict_size; }
constexpr uint32_t kMaxDictionary = 256;
// High parts that span at most this many values are counted in a table indexed by the part.
constexpr uint32_t kSpanBits = 13;

// One unit's plan: its words as frame of reference (ref + a w-bit offset), or as a
// dictionary of their high parts (the words >> rbits; at most 256) with each word's
// dictionary index and low rbits bits in one w-bit field.
struct UnitPlan {
  uint8_t mode = kFor, width = 0, rbits = 0;
  uint64_t ref = 0, delta = 0;  // kLinear: word j = ref + j * delta + field j
  uint32_t dict_size = 0;
  uint64_t dict[kMaxDictionary];
  uint8_t index[4096];  // dictionary index of each word (dictionary mode)
  size_t body_bytes(size_t m, uint32_t size) const {
    return head_words(mode, dict_size) * size + (m * width + 7) / 8;
  }
};

// A unit's m words of type U, read where they lie.
template <class U>
struct Unit {
  const unsigned char* p;
  size_t m;
  U operator[](size_t i) const { return load<U>(p + i * sizeof(U)); }
};

// A thread's planning state: the plan being made and a trial's, and the tables that count
// a unit's high parts. One lookup of the thread's own per stream: a thread_local read in a
// shared library (the Python module) is a call to __tls_get_addr, too dear per trial.
struct Planner {
  static constexpr uint32_t kSlots = 1024;
  UnitPlan u, d;
  // High parts spanning at most 2^kSpanBits values: their dictionary index, by part; every
  // slot is -1 between calls (each call puts back those it set).
  std::array<int16_t, size_t(1) << kSpanBits> by_part;
  // Others: an open-addressing table whose slots are stamped by the call that filled them
  // (no call clears it).
  std::array<uint64_t, kSlots> key;
  std::array<uint32_t, kSlots> stamp{};  // slot in use when stamp == call
  std::array<uint8_t, kSlots> at;
  uint32_t call = 0;
  Planner() { by_part.fill(-1); }
};

// Not inlined: where the address of a thread_local is visible, the compiler may compute it
// again (a call) in every loop that uses it instead of keeping it in a register.
[[gnu::noinline]] Planner& planner() {
  thread_local Planner p;
  return p;
}

// The distinct high parts (words >> rbits) of a unit in the order they first appear, with
// each word's index, into P.d when there are at most `most`; false as soon as there are more.
template <class U>
[[gnu::always_inline]] inline bool dictionary(Unit<U> w, uint64_t lo, uint64_t hi, uint32_t rbits, uint32_t most, Planner& P) {
  UnitPlan& u = P.d;
  u.dict_size = 0;
  const uint64_t base = lo >> rbits;
  if ((hi >> rbits) - base < (uint64_t(1) << kSpanBits)) {
    int16_t* at = P.by_part.data();
    bool fits = true;
    for (size_t i = 0; i < w.m; ++i) {
      const uint64_t v = uint64_t(w[i]) >> rbits;
      int16_t& s = at[v - base];
      if (s < 0) {
        if (u.dict_size == most) {
          fits = false;
          break;
        }
        s = int16_t(u.dict_size), u.dict[u.dict_size++] = v;
      }
      u.index[i] = uint8_t(s);
    }
    for (uint32_t j = 0; j < u.dict_size; ++j) at[u.dict[j] - base] = -1;
    return fits;
  }
  constexpr uint32_t slots = Planner::kSlots;
  uint64_t* key = P.key.data();
  uint32_t* stamp = P.stamp.data();
  uint8_t* at = P.at.data();
  if (++P.call == 0) P.stamp.fill(0), P.call = 1;  // after 2^32 calls the stamps start again
  const uint32_t call = P.call;
  for (size_t i = 0; i < w.m; ++i) {
    const uint64_t v = uint64_t(w[i]) >> rbits;
    uint32_t h = uint32_t((v * 0x9E3779B97F4A7C15ull) >> 54);
    while (stamp[h] == call && key[h] != v) h = (h + 1) & (slots - 1);
    if (stamp[h] != call) {
      if (u.dict_size == most) return false;
      key[h] = v, stamp[h] = call, at[h] = uint8_t(u.dict_size);
      u.dict[u.dict_size++] = v;
    }
    u.index[i] = at[h];
  }
  return true;
}

// Plans one unit into P.u, making the dictionary trials of `trials`: returns the set of
// those that made the plan smaller when they were tried (each later trial's high parts
// depend on the width of the best plan before it, so a trial that won and then lost still
// counts).
template <class U>
[[gnu::always_inline]] inline uint8_t plan_unit_body(Unit<U> w, Planner& P, uint8_t trials) {
  UnitPlan& u = P.u;
  constexpr uint32_t size = sizeof(U);
  const size_t m = w.m;
  U lo = U(~U(0)), hi = 0;
  for (size_t i = 0; i < m; ++i) lo = std::min(lo, w[i]), hi = std::max(hi, w[i]);
  u.mode = kFor, u.ref = lo, u.width = uint8_t(bits_for(uint64_t(U(hi - lo)))), u.rbits = 0, u.dict_size = 0;
  size_t best = u.body_bytes(m, size);
  uint8_t improved = 0;
  if (u.width <= 1) return improved;
  // Ascending words (sorted keys, positions, tail values): offsets from the line through the
  // first and last word.
  bool ascending = m > 2;
  for (size_t i = 1; i < m && ascending; ++i) ascending = w[i] >= w[i - 1];
  if (ascending) {
    const U delta = U((uint64_t(U(w[m - 1] - w[0])) + (m - 1) / 2) / (m - 1));
    U rlo = U(~U(0)), rhi = 0;
    for (size_t i = 0; i < m; ++i) {
      const U r = U(w[i] - U(U(i) * delta));
      rlo = std::min(rlo, r), rhi = std::max(rhi, r);
    }
    const uint8_t width = uint8_t(bits_for(uint64_t(U(rhi - rlo))));
    if (2 * size + (m * width + 7) / 8 < best) {
      best = 2 * size + (m * width + 7) / 8;
      u.mode = kLinear, u.ref = rlo, u.delta = delta, u.width = width;
      if (u.width == 0) return improved;
    }
  }
  // Dictionaries of the whole words (few distinct values: flags, charges) and of their high
  // parts above rbits = width - k low bits (the sign and exponent of floats that cross zero),
  // `width` being the best plan's so far. Each is counted only up to the entries that would
  // still make it smaller than the best (a few dozen: noise stops early).
  const UnitPlan& d = P.d;
  for (uint32_t t = 0; t < kDictionaryTrials; ++t) {
    if (!(trials >> t & 1)) continue;
    const uint32_t k = kDictionaryTrialBits[t];
    const uint32_t rbits = k >= u.width ? 0 : u.width - k;
    if (k != 64 && (rbits == 0 || k >= u.width)) continue;
    uint32_t most = kMaxDictionary;
    while (most > 1 && size_t(most) * size + (m * (bits_for(most - 1) + rbits) + 7) / 8 >= best) most /= 2;
    if (most <= 1 || !dictionary(w, lo, hi, rbits, most, P)) continue;
    const uint32_t width = bits_for(d.dict_size - 1) + rbits;
    const size_t bytes = size_t(d.dict_size) * size + (m * width + 7) / 8;
    if (width <= 64 && bytes < best) {
      best = bytes, improved |= uint8_t(1u << t);
      u.mode = kDictionary, u.width = uint8_t(width), u.rbits = uint8_t(rbits), u.dict_size = d.dict_size;
      std::copy(d.dict, d.dict + d.dict_size, u.dict);
      std::copy(d.index, d.index + m, u.index);
    }
  }
  return improved;
}

// plan_unit in a portable form and, where the processor has it, an AVX2 one (core/cpu.hpp):
// the least and greatest word, the ascending test and the line's residuals 8 words an
// instruction. Integer arithmetic: the same plan either way.
template <class U>
uint8_t plan_unit(Unit<U> w, Planner& P, uint8_t trials) {
  return with_avx2([&]() MOTES_INLINE { return plan_unit_body(w, P, trials); });
}

// 64 fields of W bits (each below 2^W) from v into W little-endian words at p: unrolled, so
// that every field's shift and every store's place is known when compiling.
template <uint32_t W>
void put_group(const uint64_t* v, unsigned char* p) {
  uint64_t acc = 0;
#pragma GCC unroll 64
  for (uint32_t j = 0; j < 64; ++j) {
    const uint32_t bit = (j * W) & 63;
    acc |= v[j] << bit;
    if (bit + W >= 64) {
      store<uint64_t>(p, acc);
      p += 8;
      acc = bit + W > 64 ? v[j] >> (64 - bit) : 0;
    }
  }
}
template <size_t... W>
constexpr auto group_packers(std::index_sequence<W...>) {
  return std::array<void (*)(const uint64_t*, unsigned char*), sizeof...(W)>{&put_group<uint32_t(W) + 1>...};
}
constexpr auto kGroupPackers = group_packers(std::make_index_sequence<64>());  // [w - 1]

// Appends m w-bit fields get(i) (each below 2^w), little-endian from bit 0, to out: the fields
// gathered 64 at a time (a loop that vectorises), packed by put_group.
template <class Get>
void put_fields(size_t m, uint32_t w, Get get, std::string& out) {
  if (!w) return;
  const size_t at = out.size(), bytes = (m * w + 7) / 8;
  out.resize(at + bytes + 8);  // 8 spare bytes for a whole-word store, cut below
  unsigned char* p = reinterpret_cast<unsigned char*>(out.data()) + at;
  const auto group = kGroupPackers[w - 1];
  uint64_t v[64];
  size_t i = 0;
  for (; i + 64 <= m; i += 64, p += 8 * w) {
    for (uint32_t j = 0; j < 64; ++j) v[j] = get(i + j);
    group(v, p);
  }
  uint64_t acc = 0;
  uint32_t fill = 0;  // the bits of acc in use
  for (; i < m; ++i) {
    const uint64_t f = get(i);
    acc |= f << fill;
    fill += w;
    if (fill >= 64) {
      store<uint64_t>(p, acc);
      p += 8, fill -= 64;
      acc = fill ? f >> (w - fill) : 0;
    }
  }
  if (fill) store<uint64_t>(p, acc);
  out.resize(at + bytes);
}

template <class U>
void pack_typed(const unsigned char* words, size_t n, std::string& out, uint32_t unit, uint8_t trials) {
  constexpr uint32_t size = sizeof(U);
  const size_t units = (n + unit - 1) / unit;
  const size_t start = out.size();
  // Room for the stream when no unit is wider than its words (most are narrower): growing
  // the string unit by unit would copy it again at every doubling.
  out.reserve(start + 4 + units * (kPackedUnitEntryBytes + 2 * size) + n * size + kPackedPadBytes + 8);
  out.append(4 + units * kPackedUnitEntryBytes, '\0');
  store<uint32_t>(out.data() + start, unit);
  Planner& P = planner();
  const UnitPlan& u = P.u;
  for (size_t k = 0; k < units; ++k) {
    const Unit<U> w{words + k * unit * size, std::min<size_t>(unit, n - k * unit)};
    const size_t m = w.m;
    plan_unit(w, P, trials);
    unsigned char* e = reinterpret_cast<unsigned char*>(out.data()) + start + 4 + k * kPackedUnitEntryBytes;
    store<uint32_t>(e, uint32_t(out.size() - start));
    e[4] = u.width, e[5] = u.mode;
    if (u.mode == kDictionary) e[6] = uint8_t(u.dict_size - 1), e[7] = u.rbits;
    if (u.mode == kFor) {
      out.append(reinterpret_cast<const char*>(&u.ref), size);
      const U ref = U(u.ref);
      put_fields(m, u.width, [&](size_t i) { return uint64_t(U(w[i] - ref)); }, out);
    } else if (u.mode == kLinear) {
      out.append(reinterpret_cast<const char*>(&u.ref), size);
      out.append(reinterpret_cast<const char*>(&u.delta), size);
      const U ref = U(u.ref), delta = U(u.delta);
      const uint64_t mask = mask_of(u.width);
      put_fields(m, u.width, [&](size_t i) { return uint64_t(U(w[i] - U(U(i) * delta) - ref)) & mask; }, out);
    } else {
      U dict[kMaxDictionary];  // the entries as words of the unit's size, appended at once
      for (uint32_t j = 0; j < u.dict_size; ++j) dict[j] = U(u.dict[j]);
      out.append(reinterpret_cast<const char*>(dict), size_t(u.dict_size) * size);
      const uint32_t r = u.rbits;
      const uint64_t low = mask_of(r);
      put_fields(m, u.width, [&](size_t i) { return uint64_t(u.index[i]) << r | (uint64_t(w[i]) & low); }, out);
    }
  }
  out.append(kPackedPadBytes, '\0');
}

}  // namespace

void pack_words(const unsigned char* words, size_t n, uint32_t size, std::string& out, uint32_t unit, uint8_t trials) {
  words::with_word(size, [&](auto z) { pack_typed<decltype(z)>(words, n, out, unit, trials); });
}

void DictionaryGains::add(const unsigned char* words, size_t n, uint32_t size) {
  words::with_word(size, [&](auto z) {
    using U = decltype(z);
    Planner& P = planner();
    for (uint32_t unit : kPackedUnitSizes)
      for (size_t at = 0; at < n; at += unit) {
        const uint8_t improved = plan_unit(Unit<U>{words + at * sizeof(U), std::min<size_t>(unit, n - at)}, P, kAllDictionaryTrials);
        for (uint32_t t = 0; t < kDictionaryTrials; ++t) improving[t] += improved >> t & 1;
      }
  });
}

uint8_t DictionaryGains::paying() const {
  uint8_t trials = 0;
  for (uint32_t t = 0; t < kDictionaryTrials; ++t)
    if (improving[t]) trials |= uint8_t(1u << t);
  return trials;
}

std::string PackedWords::open(const unsigned char* s, size_t len, size_t n, uint32_t size, bool checked) {
  if (len < 4 + kPackedPadBytes) return "packed stream is shorter than its header";
  const uint32_t unit = load<uint32_t>(s);
  if (unit < 64 || unit > 4096 || (unit & (unit - 1))) return "packed stream has a unit of " + std::to_string(unit) + " words";
  if (checked) {
    s_ = s, len_ = len, n_ = n, size_ = size, shift_ = uint32_t(__builtin_ctz(unit));
    return {};
  }
  const size_t units = (n + unit - 1) / unit;
  if (units > (len - 4 - kPackedPadBytes) / kPackedUnitEntryBytes) return "packed stream is shorter than its unit table";
  size_t at = 4 + units * kPackedUnitEntryBytes;
  for (size_t k = 0; k < units; ++k) {
    const unsigned char* e = s + 4 + k * kPackedUnitEntryBytes;
    const uint32_t w = e[4], mode = e[5], d = e[6] + 1u, r = e[7];
    const size_t m = std::min<size_t>(unit, n - k * unit);
    auto which = [&] { return "packed unit " + std::to_string(k); };  // for errors only
    if (load<uint32_t>(e) != at) return which() + " does not start where the one before ends";
    if (mode == kFor || mode == kLinear) {
      if (w > 8 * size || e[6] || e[7]) return which() + " has a width of " + std::to_string(w) + " bits or a dictionary";
    } else if (mode == kDictionary) {
      if (w > 64 || r >= 8 * size || w < r || w - r > 8 || (uint64_t(1) << (w - r)) < d)
        return which() + " has a dictionary of " + std::to_string(d) + " words in fields of " + std::to_string(w) +
               " bits with " + std::to_string(r) + " low bits";
    } else {
      return which() + " has an unknown mode " + std::to_string(mode);
    }
    const size_t body = head_words(uint8_t(mode), d) * size + (m * w + 7) / 8;
    if (body > len - kPackedPadBytes - at) return which() + " runs past the end of the stream";
    at += body;
  }
  if (at + kPackedPadBytes != len) return "packed stream has " + std::to_string(len - at) + " bytes after its units, expected 8";
  for (size_t i = at; i < len; ++i)
    if (s[i]) return "packed stream has a nonzero padding byte";
  s_ = s, len_ = len, n_ = n, size_ = size, shift_ = uint32_t(__builtin_ctz(unit));
  return {};
}

bool PackedWords::word(size_t i, uint64_t& out) const {
  const unsigned char* e = s_ + 4 + (i >> shift_) * kPackedUnitEntryBytes;
  const unsigned char* body = s_ + load<uint32_t>(e);
  const uint32_t w = e[4];
  const size_t j = i & ((size_t(1) << shift_) - 1);
  if (e[5] == kFor) {
    out = (word_at(body, size_) + field(body + size_, uint64_t(j) * w, w)) & mask_of(8 * size_);
    return true;
  }
  if (e[5] == kLinear) {
    out = (word_at(body, size_) + uint64_t(j) * word_at(body + size_, size_) + field(body + 2 * size_, uint64_t(j) * w, w)) &
          mask_of(8 * size_);
    return true;
  }
  const uint32_t d = e[6] + 1u, r = e[7];
  const uint64_t f = field(body + size_t(d) * size_, uint64_t(j) * w, w);
  const uint64_t k = f >> r;
  if (k >= d) return false;
  out = ((word_at(body + k * size_, size_) << r) | (f & mask_of(r))) & mask_of(8 * size_);
  return true;
}

void PackedWords::prefetch(size_t i) const {
  if (i >= n_) return;
  const unsigned char* e = s_ + 4 + (i >> shift_) * kPackedUnitEntryBytes;  // the unit table: small, mostly cached
  const uint32_t at = load<uint32_t>(e);
  if (at >= len_) return;  // damaged: word() says so
  const unsigned char* body = s_ + at;
  const uint64_t j = i & ((size_t(1) << shift_) - 1);
  __builtin_prefetch(body);
  __builtin_prefetch(body + head_words(e[5], e[6] + 1u) * size_ + (j * e[4]) / 8);
}

std::string PackedWords::unpack(unsigned char* dst, uint64_t add, const WordMap& map) const {
  const size_t unit = size_t(1) << shift_, units = (n_ + unit - 1) / unit;
  for (size_t k = 0; k < units; ++k) {
    const unsigned char* e = s_ + 4 + k * kPackedUnitEntryBytes;
    const unsigned char* body = s_ + load<uint32_t>(e);
    const uint32_t w = e[4];
    const size_t m = std::min(unit, n_ - k * unit);
    unsigned char* out = dst + k * unit * size_;
    if (e[5] == kFor) {
      kernels::for_unpacker(size_, w)(body + size_, m, word_at(body, size_) + add, map, out);
    } else if (e[5] == kLinear) {
      kernels::for_unpacker(size_, w)(body + 2 * size_, m, word_at(body, size_), WordMap{}, out);
      const uint64_t delta = word_at(body + size_, size_);
      words::with_word(size_, [&](auto z) {
        using U = decltype(z);
        const Unorder<U> f(map);
        for (size_t j = 0; j < m; ++j) store<U>(out + j * size_, f(U(load<U>(out + j * size_) + uint64_t(j) * delta + add)));
      });
    } else if (!kernels::dict_unpacker(size_, w)(body + size_t(e[6] + 1u) * size_, m, body, e[6] + 1u, e[7], add, map, out)) {
      return "packed unit " + std::to_string(k) + " indexes past its dictionary";
    }
    // Bits after the unit's last field are zero (a stream has one form).
    const size_t bits = m * w;
    if (bits % 8 && (body[head_words(e[5], e[6] + 1u) * size_ + bits / 8] >> (bits % 8)))
      return "packed unit " + std::to_string(k) + " has bits set after its last word";
  }
  return {};
}

}  // namespace motes::codec
