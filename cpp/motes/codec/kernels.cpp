// The kernels of kernels.hpp, compiled for any x86-64 and again for x86-64-v3 (GCC's target
// pragma, clang's target attribute: the functions inlined into them, such as bits::field,
// take the wider instructions too), chosen once by what the processor reports.
#include "motes/codec/kernels.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "motes/codec/bits.hpp"
#include "motes/codec/words.hpp"
#include "motes/core/bytes.hpp"

namespace motes::codec::kernels {

using namespace bits;

namespace plain {
#include "motes/codec/kernels_impl.hpp"
}  // namespace plain

// GCC: its target pragma; clang (the fuzzers' builds, so that they reach the AVX2 forms
// too): the instructions the copy uses (AVX2, BMI, BMI2, FMA, POPCNT), as a target attribute
// on every function of it.
#if defined(__x86_64__) && defined(__clang__)
#define MOTES_KERNELS_V3 1
#pragma clang attribute push(__attribute__((target("avx2,bmi,bmi2,fma,popcnt"))), apply_to = function)
#elif defined(__x86_64__) && defined(__GNUC__)
#define MOTES_KERNELS_V3 1
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#endif
#ifdef MOTES_KERNELS_V3
#define MOTES_KERNELS_AVX2 1  // kernels_impl.hpp's 8-lane forms
namespace v3 {
#include "motes/codec/kernels_impl.hpp"
}  // namespace v3
#undef MOTES_KERNELS_AVX2
#endif
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute pop
#elif defined(__x86_64__) && defined(__GNUC__)
#pragma GCC pop_options
#endif

Isa best_isa() {
#ifdef MOTES_KERNELS_V3
#ifdef __clang__  // clang 14 knows no feature levels here: the features its copy is built with
  static const Isa best = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
                                  __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma") &&
                                  __builtin_cpu_supports("popcnt")
                              ? Isa::v3
                              : Isa::plain;
#else
  static const Isa best = __builtin_cpu_supports("x86-64-v3") ? Isa::v3 : Isa::plain;
#endif
  return best;
#else
  return Isa::plain;
#endif
}

ForUnpacker for_unpacker(uint32_t size, uint32_t w, [[maybe_unused]] Isa isa) {
#ifdef MOTES_KERNELS_V3
  if (isa == Isa::v3) return v3::for_unpacker_at(size, w);
#endif
  return plain::for_unpacker_at(size, w);
}

DictUnpacker dict_unpacker(uint32_t size, uint32_t w, [[maybe_unused]] Isa isa) {
#ifdef MOTES_KERNELS_V3
  if (isa == Isa::v3) return v3::dict_unpacker_at(size, w);
#endif
  return plain::dict_unpacker_at(size, w);
}

BinsUnpacker bins_unpacker(uint32_t size, [[maybe_unused]] Isa isa) {
#ifdef MOTES_KERNELS_V3
  if (isa == Isa::v3) return v3::bins_unpacker_at(size);
#endif
  return plain::bins_unpacker_at(size);
}

}  // namespace motes::codec::kernels
