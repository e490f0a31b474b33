// Loops compiled a second time for AVX2 and chosen at run time, where the processor has it
// (with_avx2, below): a function marked MOTES_AVX2 (GCC and clang on x86-64) is compiled
// with AVX2's instructions, and the functions inlined into it with them; cpu_has_avx2() says
// whether to call it (asked once; the environment variable MOTES_NO_AVX2, set to anything, keeps the
// portable forms: tests compare the two). AVX2 alone: no FMA, so floating-point results are
// those of the portable form. The codec's unpacking kernels, which use more of x86-64-v3, choose their
// own form (codec/kernels.hpp).
#pragma once

#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MOTES_AVX2 __attribute__((target("avx2")))
#define MOTES_HAVE_AVX2 1
#endif

namespace motes {

inline bool cpu_has_avx2() {
#ifdef MOTES_HAVE_AVX2
  static const bool yes = __builtin_cpu_supports("avx2") && !std::getenv("MOTES_NO_AVX2");
  return yes;
#else
  return false;
#endif
}

// body() compiled twice, with AVX2's instructions and without, and run in the form the
// processor takes (cpu_has_avx2). body is a lambda marked MOTES_INLINE (so that it, and the
// always-inlined functions it calls, are compiled into each form), e.g.
//   return with_avx2([&]() MOTES_INLINE { return loop(v, n); });
#define MOTES_INLINE __attribute__((always_inline))
template <class F>
decltype(auto) run_portable(F& body) {
  return body();
}
#ifdef MOTES_HAVE_AVX2
template <class F>
MOTES_AVX2 decltype(auto) run_avx2(F& body) {
  return body();
}
#endif
template <class F>
decltype(auto) with_avx2(F&& body) {
#ifdef MOTES_HAVE_AVX2
  if (cpu_has_avx2()) return run_avx2(body);
#endif
  return run_portable(body);
}

}  // namespace motes
