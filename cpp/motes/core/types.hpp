// Core value types shared by every layer: dtypes, schema, column views, errors (errors.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"

namespace motes {

// How bulk values are stored (particle columns, field samples).
enum class Compression : uint8_t {
  none = 0,      // values stored as they are (particle columns are read in place)
  lossless = 1,  // coded when that pays: predictor, byte planes, zstd or lz4
};

// The stored dtypes, one row each: the single table every layer derives from (the enum,
// sizes, names, dispatch on the C++ type; the C API's motes_dtype values, checked in
// capi/motes.cpp; the Fortran constants, checked by tests/cpp/core/test_tables.cpp; the
// Python extension's numpy conversions and motes.dtypes, from _core.dtypes).
//
// X(name, code, C++ type, numpy name, C API name)
//   code      part of the on-disk format (docs/format.md): never renumber
//   name      as the manifest, messages and Python write it ("f32")
#define MOTES_DTYPES(X)                       \
  X(f32, 1, float, "float32", MOTES_F32)      \
  X(f64, 2, double, "float64", MOTES_F64)     \
  X(i8, 3, int8_t, "int8", MOTES_I8)          \
  X(i16, 4, int16_t, "int16", MOTES_I16)      \
  X(i32, 5, int32_t, "int32", MOTES_I32)      \
  X(i64, 6, int64_t, "int64", MOTES_I64)      \
  X(u8, 7, uint8_t, "uint8", MOTES_U8)        \
  X(u16, 8, uint16_t, "uint16", MOTES_U16)    \
  X(u32, 9, uint32_t, "uint32", MOTES_U32)    \
  X(u64, 10, uint64_t, "uint64", MOTES_U64)

enum class DType : uint8_t {
#define MOTES_DTYPE_ENUM(name, code, ...) name = code,
  MOTES_DTYPES(MOTES_DTYPE_ENUM)
#undef MOTES_DTYPE_ENUM
};

// One row of the table.
struct DTypeInfo {
  DType dtype;
  const char* name;        // "f32"
  const char* numpy_name;  // "float32"
  uint8_t size;            // bytes
  char kind;               // as numpy's dtype.kind: 'f' floating point, 'i' signed, 'u' unsigned integer
};

template <class T>
constexpr char dtype_kind_of() {
  return std::is_floating_point_v<T> ? 'f' : std::is_signed_v<T> ? 'i' : 'u';
}

inline constexpr DTypeInfo dtype_table[] = {
#define MOTES_DTYPE_ROW(name, code, type, numpy_name, c_name) \
  {DType::name, #name, numpy_name, uint8_t(sizeof(type)), dtype_kind_of<type>()},
    MOTES_DTYPES(MOTES_DTYPE_ROW)
#undef MOTES_DTYPE_ROW
};

// Switches generated from the table: constant time (dtype_size is on hot paths).
constexpr bool dtype_valid(uint8_t c) {
  switch (c) {
#define MOTES_DTYPE_VALID(name, code, ...) case code:
    MOTES_DTYPES(MOTES_DTYPE_VALID)
#undef MOTES_DTYPE_VALID
    return true;
  }
  return false;
}

inline size_t dtype_size(DType t) {
  switch (t) {
#define MOTES_DTYPE_SIZE(name, code, type, ...) \
  case DType::name:                             \
    return sizeof(type);
    MOTES_DTYPES(MOTES_DTYPE_SIZE)
#undef MOTES_DTYPE_SIZE
  }
  throw FormatError("unknown dtype code " + std::to_string(int(t)));
}

constexpr const char* dtype_name(DType t) {
  switch (t) {
#define MOTES_DTYPE_NAME(name, ...) \
  case DType::name:                 \
    return #name;
    MOTES_DTYPES(MOTES_DTYPE_NAME)
#undef MOTES_DTYPE_NAME
  }
  return "?";
}

// The dtype named `name` ("f32"), if any.
constexpr std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& d : dtype_table)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

// Calls f(T{}) with T the C++ type of dtype t; the one place dtypes become types.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
#define MOTES_DTYPE_CASE(name, code, type, ...) \
  case DType::name:                             \
    return f(type{});
    MOTES_DTYPES(MOTES_DTYPE_CASE)
#undef MOTES_DTYPE_CASE
  }
  throw FormatError("unknown dtype code " + std::to_string(int(t)));
}

// How a column's values are indexed beyond per-node min/max and the 32-bin bitmap.
enum class IndexKind : uint8_t {
  none = 0,      // 32 equal-width bins per node only
  quantile = 1,  // plus a u8 quantile code per point (for spatially incoherent columns)
  automatic = 255,  // writer decides from the data (never stored on disk)
};

// The position columns every particle schema has, in axis order (the tree splits on them, a
// box tests them); f32 or f64.
inline constexpr const char* kPositionColumns[3] = {"x", "y", "z"};
constexpr bool is_position_column(std::string_view name) { return name == "x" || name == "y" || name == "z"; }

struct ColumnSpec {
  std::string name;
  DType dtype;
  IndexKind index = IndexKind::automatic;
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
