// Core value types shared by every layer: dtypes, schema, column views, errors (errors.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"

namespace motes {

// The codes are part of the on-disk format (docs/format.md): never renumber.
enum class DType : uint8_t {
  f32 = 1, f64 = 2,
  i8 = 3, i16 = 4, i32 = 5, i64 = 6,
  u8 = 7, u16 = 8, u32 = 9, u64 = 10,
};

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: return 1;
    case DType::i16: case DType::u16: return 2;
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::f64: case DType::i64: case DType::u64: return 8;
  }
  throw FormatError("unknown dtype code " + std::to_string(int(t)));
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32"; case DType::f64: return "f64";
    case DType::i8: return "i8"; case DType::i16: return "i16";
    case DType::i32: return "i32"; case DType::i64: return "i64";
    case DType::u8: return "u8"; case DType::u16: return "u16";
    case DType::u32: return "u32"; case DType::u64: return "u64";
  }
  return "?";
}

inline bool dtype_valid(uint8_t code) { return code >= 1 && code <= 10; }

// Calls f(T{}) with T the C++ type of dtype t; the one place dtypes become types.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i8: return f(int8_t{});
    case DType::i16: return f(int16_t{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8: return f(uint8_t{});
    case DType::u16: return f(uint16_t{});
    case DType::u32: return f(uint32_t{});
    case DType::u64: return f(uint64_t{});
  }
  throw FormatError("unknown dtype code " + std::to_string(int(t)));
}

// How a column's values are indexed beyond per-node min/max and the 32-bin bitmap.
enum class FineIndex : uint8_t {
  none = 0,      // 32 equal-width bins per node only
  quantile = 1,  // plus a u8 quantile code per point (for spatially incoherent columns)
  automatic = 255,  // writer decides from the data (never stored on disk)
};

struct ColumnSpec {
  std::string name;
  DType dtype;
  FineIndex fine = FineIndex::automatic;
  std::string unit;  // free text, e.g. openPMD unitSI/unitDimension as JSON; empty when unknown
  // Largest difference allowed between a value given and the value stored (error-bounded
  // lossy storage); 0 = lossless.
  double error_bound = 0.0;
};

// A borrowed, strided, typed 1-D array (zero-copy view of caller memory).
struct ColumnView {
  ColumnSpec spec;
  const void* data = nullptr;
  uint64_t count = 0;
  // Bytes from one value to the next: any sign, and 0 for one value broadcast to every
  // row. Unset means contiguous (the dtype's size).
  std::optional<int64_t> stride_bytes;

  int64_t stride() const { return stride_bytes.value_or(int64_t(dtype_size(spec.dtype))); }
  template <class T>
  T at(uint64_t i) const {
    return *reinterpret_cast<const T*>(static_cast<const char*>(data) + int64_t(i) * stride());
  }
};

// Reads element i of a typed buffer as double (for stats and bins).
inline double load_as_double(DType t, const void* base, uint64_t i) {
  return dispatch_dtype(t, [&](auto v) -> double {
    using T = decltype(v);
    return double(static_cast<const T*>(base)[i]);
  });
}

// Reads one position column (f32 or f64, any stride) as double; the caller checked the dtype.
struct Coordinate {
  const char* base;
  int64_t stride;
  bool is_f32;
  explicit Coordinate(const ColumnView& c)
      : base(static_cast<const char*>(c.data)), stride(c.stride()), is_f32(c.spec.dtype == DType::f32) {}
  void prefetch(uint64_t row) const { __builtin_prefetch(base + int64_t(row) * stride); }
  double operator[](uint64_t row) const {
    const char* p = base + int64_t(row) * stride;
    return is_f32 ? double(*reinterpret_cast<const float*>(p)) : *reinterpret_cast<const double*>(p);
  }
};

struct Box {
  double lo[3];
  double hi[3];
};

}  // namespace motes
