#include "motes/codec/predictors.hpp"

#include <cmath>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <algorithm>
#include <cstring>
#include <limits>

#include "motes/codec/words.hpp"
#include "motes/core/cpu.hpp"
#include "motes/core/types.hpp"

namespace motes::codec {

using namespace words;

namespace {

// Grid indexes of non-finite values (finite ones are far from these: |q| < 2^53).
template <class U>
struct GridCodes {
  using S = Signed<U>;
  static constexpr S nan = std::numeric_limits<S>::min();
  static constexpr S pinf = std::numeric_limits<S>::max();
  static constexpr S ninf = std::numeric_limits<S>::min() + 1;
};

// The grid index of a float's bits, when the float lies exactly on the grid; false otherwise.
template <class U>
bool grid_index(U bits, double origin, double step, Signed<U>& q) {
  using G = GridCodes<U>;
  const double v = float_value<U>(bits);
  if (std::isnan(v)) return q = G::nan, true;
  if (std::isinf(v)) return q = v > 0 ? G::pinf : G::ninf, true;
  const double k = std::nearbyint((v - origin) / step);
  if (!(std::fabs(k) < 9007199254740992.0) || std::fabs(k) >= double(std::numeric_limits<Signed<U>>::max() / 2)) return false;
  q = Signed<U>(int64_t(k));
  return float_bits<U>(grid_value(origin, step, int64_t(q))) == bits;
}
template <class U>
U grid_bits(Signed<U> q, double origin, double step) {
  using G = GridCodes<U>;
  if (q == G::nan) return float_bits<U>(std::numeric_limits<double>::quiet_NaN());
  if (q == G::pinf) return float_bits<U>(INFINITY);
  if (q == G::ninf) return float_bits<U>(-INFINITY);
  return float_bits<U>(grid_value(origin, step, int64_t(q)));
}

// The grid step of each quantile bin's lower edge: qbase[k] = nearest grid index of edges[k].
// (Any deterministic function of the edges decodes correctly; this one makes residuals small.)
template <class U>
void grid_bases(const double* edges, double origin, double step, Signed<U>* out) {
  using S = Signed<U>;
  constexpr double lim = double(std::numeric_limits<S>::max() / 4);
  for (size_t k = 0; k < 256; ++k) {
    const double q = std::nearbyint((edges[k] - origin) / step);
    out[k] = std::isfinite(q) ? S(std::max(-lim, std::min(lim, q))) : S(0);
  }
}

// f(order), order(u) being ordered<U>(u, t) with t's kind fixed at compile time, so that the
// loops that take it have no test inside and vectorise. Always inlined: each form of
// forward (portable, AVX2) gets its own loops.
template <class U, class F>
[[gnu::always_inline]] inline void with_order(const ValueType& t, F&& f) {
  if (t.is_float) f([](U u) { return ordered<U>(u, ValueType{sizeof(U), true, true}); });
  else if (t.is_signed) f([](U u) { return ordered<U>(u, ValueType{sizeof(U), false, true}); });
  else f([](U u) { return u; });
}

// words[i] = predictor(values)[i]; returns the parameter (Predictor::offset's reference).
// Inlined into a portable form and an AVX2 one (forward, below).
template <class U>
[[gnu::always_inline]] inline U forward_body(Predictor p, const ValueType& t, const unsigned char* src, size_t n, const Context& ctx, unsigned char* words,
          bool& ok) {
  U param = 0;
  ok = true;
  switch (p) {
    case Predictor::grid:
    case Predictor::grid_delta:
    case Predictor::grid_quantile: {
      if constexpr (sizeof(U) >= 4) {
        if (!t.is_float || !(ctx.grid_step > 0)) return ok = false, 0;
        Signed<U> qbase[256];
        if (p == Predictor::grid_quantile) {
          if (!ctx.codes || !ctx.edges) return ok = false, 0;
          grid_bases<U>(ctx.edges, ctx.grid_origin, ctx.grid_step, qbase);
        }
        Signed<U> prev = 0;
        for (size_t i = 0; i < n; ++i) {
          Signed<U> q;
          if (!grid_index<U>(load<U>(src + i * sizeof(U)), ctx.grid_origin, ctx.grid_step, q)) return ok = false, 0;
          const U w = p == Predictor::grid         ? U(q)
                      : p == Predictor::grid_delta ? zigzag<U>(U(U(q) - U(prev)))
                                                   : U(U(q) - U(qbase[ctx.codes[i]]));
          put<U>(words + i * sizeof(U), w);
          prev = q;
        }
      } else {
        ok = false;
      }
      break;
    }
    case Predictor::none:
      std::memcpy(words, src, n * sizeof(U));
      break;
    case Predictor::delta: {
      U prev = 0;
      for (size_t i = 0; i < n; ++i) {
        U v = load<U>(src + i * sizeof(U));
        put<U>(words + i * sizeof(U), zigzag<U>(U(v - prev)));
        prev = v;
      }
      break;
    }
    case Predictor::xor_: {
      U prev = 0;
      for (size_t i = 0; i < n; ++i) {
        U v = load<U>(src + i * sizeof(U));
        put<U>(words + i * sizeof(U), U(v ^ prev));
        prev = v;
      }
      break;
    }
    case Predictor::quantile: {
      const uint64_t* bases = ctx.bases;
      const uint8_t* codes = ctx.codes;
      with_order<U>(t, [&](auto order) {
        for (size_t i = 0; i < n; ++i)
          put<U>(words + i * sizeof(U), U(order(load<U>(src + i * sizeof(U))) - U(bases[codes[i]])));
      });
      break;
    }
    case Predictor::offset: {
      with_order<U>(t, [&](auto order) {
        U lo = std::numeric_limits<U>::max();
        for (size_t i = 0; i < n; ++i) lo = std::min(lo, order(load<U>(src + i * sizeof(U))));
        param = n ? lo : 0;
        const U ref = param;
        for (size_t i = 0; i < n; ++i) put<U>(words + i * sizeof(U), U(order(load<U>(src + i * sizeof(U))) - ref));
      });
      break;
    }
    case Predictor::zfp:  // not a word transform: the block format codes it whole (zfp.cpp)
      ok = false;
      break;
  }
  return param;
}

// With AVX2 (core/cpu.hpp): the frames of reference's least word and the differences 8
// words an instruction. No FMA: the grid predictors' arithmetic is the portable form's.
template <class U>
U forward(Predictor p, const ValueType& t, const unsigned char* src, size_t n, const Context& ctx, unsigned char* words,
          bool& ok) {
  return with_avx2([&]() MOTES_INLINE { return forward_body<U>(p, t, src, n, ctx, words, ok); });
}

// In place: words[i] = sum of unzigzag(words[0..i]) (wrapping), 4 lanes at a time; returns
// how many words it did (a multiple of 4) and leaves the running sum in acc.
size_t prefix_sum_zigzag32(unsigned char* data, size_t n, uint32_t& acc) {
#ifdef __SSE2__
  __m128i carry = _mm_set1_epi32(int(acc));
  const __m128i one = _mm_set1_epi32(1);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 4 * i));
    v = _mm_xor_si128(_mm_srli_epi32(v, 1), _mm_sub_epi32(_mm_setzero_si128(), _mm_and_si128(v, one)));
    v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
    v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
    v = _mm_add_epi32(v, carry);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(data + 4 * i), v);
    carry = _mm_shuffle_epi32(v, 0xFF);
  }
  acc = uint32_t(_mm_cvtsi128_si32(carry));
  return i;
#else
  (void)data, (void)n, (void)acc;
  return 0;
#endif
}

template <class U>
void inverse(Predictor p, const ValueType& t, unsigned char* data, size_t n, const Context& ctx, U param,
             double origin, double step) {
  switch (p) {
    case Predictor::grid:
    case Predictor::grid_delta:
    case Predictor::grid_quantile: {
      if constexpr (sizeof(U) >= 4) {
        Signed<U> qbase[256];
        if (p == Predictor::grid_quantile) grid_bases<U>(ctx.edges, origin, step, qbase);
        U acc = 0;
        for (size_t i = 0; i < n; ++i) {
          U w = load<U>(data + i * sizeof(U));
          if (p == Predictor::grid_delta) w = acc = U(acc + unzigzag<U>(w));
          if (p == Predictor::grid_quantile) w = U(w + U(qbase[ctx.codes[i]]));
          put<U>(data + i * sizeof(U), grid_bits<U>(Signed<U>(w), origin, step));
        }
      }
      return;
    }
    case Predictor::none:
      return;
    case Predictor::delta: {
      U acc = 0;
      size_t i = 0;
      if constexpr (sizeof(U) == 4) i = prefix_sum_zigzag32(data, n, reinterpret_cast<uint32_t&>(acc));
      for (; i < n; ++i) {
        acc = U(acc + unzigzag<U>(load<U>(data + i * sizeof(U))));
        put<U>(data + i * sizeof(U), acc);
      }
      return;
    }
    case Predictor::xor_: {
      U acc = 0;
      for (size_t i = 0; i < n; ++i) {
        acc ^= load<U>(data + i * sizeof(U));
        put<U>(data + i * sizeof(U), acc);
      }
      return;
    }
    case Predictor::quantile: {
      // Local copies: stores into data could alias t and ctx, which would keep the compiler
      // from hoisting the type's test out of the loop (and from vectorizing it).
      const ValueType type = t;
      const uint64_t* bases = ctx.bases;
      const uint8_t* codes = ctx.codes;
      for (size_t i = 0; i < n; ++i)
        put<U>(data + i * sizeof(U), unordered<U>(U(load<U>(data + i * sizeof(U)) + U(bases[codes[i]])), type));
      return;
    }
    case Predictor::offset: {
      const ValueType type = t;
      for (size_t i = 0; i < n; ++i) put<U>(data + i * sizeof(U), unordered<U>(U(load<U>(data + i * sizeof(U)) + param), type));
      return;
    }
    case Predictor::zfp:  // decoded whole by zfp.cpp, never through here
      return;
  }
}

}  // namespace

uint64_t predict(Predictor p, const ValueType& t, const unsigned char* values, size_t n, const Context& ctx,
                 unsigned char* words, bool& ok) {
  return with_word(t.size, [&](auto w) -> uint64_t {
    using U = decltype(w);
    return uint64_t(forward<U>(p, t, values, n, ctx, words, ok));
  });
}

void unpredict(Predictor p, const ValueType& t, unsigned char* data, size_t n, const Context& ctx, uint64_t param,
               double origin, double step) {
  with_word(t.size, [&](auto w) {
    using U = decltype(w);
    inverse<U>(p, t, data, n, ctx, U(param), origin, step);
  });
}

const char* predictor_name(Predictor p) {
  switch (p) {
    case Predictor::none: return "none";
    case Predictor::delta: return "delta";
    case Predictor::xor_: return "xor";
    case Predictor::quantile: return "quantile";
    case Predictor::offset: return "offset";
    case Predictor::grid: return "grid";
    case Predictor::grid_delta: return "grid+delta";
    case Predictor::grid_quantile: return "grid+quantile";
    case Predictor::zfp: return "zfp";
  }
  return "unknown";
}

std::vector<uint64_t> quantile_bases(uint8_t dtype_code, const double* edges) {
  const ValueType t = value_type(dtype_code);
  std::vector<uint64_t> bases(256);
  for (size_t k = 0; k < 256; ++k) {
    const double e = edges[k];
    bases[k] = with_word(t.size, [&](auto w) -> uint64_t {
      using U = decltype(w);
      U bits = 0;
      if (t.is_float) {
        if constexpr (sizeof(U) == 4) {
          float f = float(e);
          std::memcpy(&bits, &f, 4);
        } else if constexpr (sizeof(U) == 8) {
          std::memcpy(&bits, &e, 8);
        }
      } else if (t.is_signed) {
        using S = Signed<U>;
        long double f = std::isnan(e) ? 0.0L : std::floor((long double)e);
        S v = f <= (long double)std::numeric_limits<S>::min() ? std::numeric_limits<S>::min()
              : f >= (long double)std::numeric_limits<S>::max() ? std::numeric_limits<S>::max()
                                                                : S(f);
        bits = U(v);
      } else {
        long double f = std::isnan(e) ? 0.0L : std::floor((long double)e);
        bits = f <= 0 ? U(0) : f >= (long double)std::numeric_limits<U>::max() ? std::numeric_limits<U>::max() : U(f);
      }
      return uint64_t(ordered<U>(bits, t));
    });
  }
  return bases;
}

double grid_value(double origin, double step, int64_t q) { return origin + double(q) * step; }

Grid make_grid(uint8_t dtype_code, double lo, double hi, double bound, const std::string& column) {
  const ValueType t = value_type(dtype_code);
  if (!t.is_float) throw UsageError("column '" + column + "': error bounds apply to float columns, not " + dtype_name(DType(dtype_code)));
  if (!(bound > 0) || !std::isfinite(bound))
    throw UsageError("column '" + column + "': the error bound must be a finite number > 0, got " + number_text(bound));
  // The spacing of the type at the largest magnitude, twice: a stored value is the grid point
  // rounded to the type, so the grid must leave room for that rounding (and the arithmetic's).
  const double mag = std::max(std::fabs(lo), std::fabs(hi));
  const double ulp = t.size == 4 ? double(std::nextafter(float(mag), INFINITY)) - double(float(mag))
                                 : std::nextafter(mag, INFINITY) - mag;
  const double margin = 2 * ulp;
  if (!(bound >= 2 * margin))
    throw UsageError("column '" + column + "': error bound " + number_text(bound) + " is too small for " +
                     dtype_name(DType(dtype_code)) + " values as large as " + number_text(mag) + " (they are " +
                     number_text(ulp) + " apart there); use a bound of at least " + number_text(2 * margin) +
                     " or store the column exactly");
  Grid g;
  g.origin = std::isfinite(lo) ? lo : 0.0;
  g.step = 2 * (bound - margin);
  return g;
}

double quantize(uint8_t dtype_code, const Grid& g, const void* src, int64_t stride, uint64_t n, void* dst) {
  const ValueType t = value_type(dtype_code);
  double worst = 0;
  with_word(t.size, [&](auto w) {
    using U = decltype(w);
    if constexpr (sizeof(U) >= 4) {
      const char* in = static_cast<const char*>(src);
      unsigned char* out = static_cast<unsigned char*>(dst);
      for (uint64_t i = 0; i < n; ++i) {
        const U bits = load<U>(reinterpret_cast<const unsigned char*>(in + int64_t(i) * stride));
        const double v = float_value<U>(bits);
        U stored = bits;
        if (std::isfinite(v)) {
          const double k = std::nearbyint((v - g.origin) / g.step);
          stored = float_bits<U>(grid_value(g.origin, g.step, int64_t(k)));
          worst = std::max(worst, std::fabs(float_value<U>(stored) - v));
        }
        put<U>(out + i * sizeof(U), stored);
      }
    }
  });
  return worst;
}

}  // namespace motes::codec
