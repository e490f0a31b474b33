// The dtype table (core/types.hpp) and the copies other languages need: the codec's value
// types, the Fortran module's constants (motes.f90 cannot include a C++ header, so this test
// compares). The C header's values are tied to the table by static_asserts in capi/motes.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "motes/codec/codec.hpp"
#include "motes/core/errors.hpp"
#include "motes/core/types.hpp"

using namespace motes;

namespace {

std::string source_file(const std::string& path) {
  std::ifstream in(std::string(MOTES_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether the Fortran source declares `name = value` (a named constant).
bool declares(const std::string& fortran, const std::string& name, int value) {
  return std::regex_search(fortran, std::regex("\\b" + name + "\\s*=\\s*" + std::to_string(value) + "\\b"));
}

}  // namespace

TEST(DTypes, TableRowsAreUniqueAndConsistent) {
  std::set<int> codes;
  std::set<std::string> names, numpy_names;
  for (const DTypeInfo& d : dtype_table) {
    EXPECT_TRUE(codes.insert(int(d.dtype)).second) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_TRUE(numpy_names.insert(d.numpy_name).second) << d.name;
    EXPECT_GT(int(d.dtype), 0) << "0 is no dtype";
    EXPECT_TRUE(dtype_valid(uint8_t(d.dtype)));
    EXPECT_EQ(dtype_size(d.dtype), d.size);
    EXPECT_STREQ(dtype_name(d.dtype), d.name);
    EXPECT_EQ(dtype_from_name(d.name), d.dtype);
    dispatch_dtype(d.dtype, [&](auto v) {
      using T = decltype(v);
      EXPECT_EQ(sizeof(T), d.size) << d.name;
      EXPECT_EQ(dtype_kind_of<T>(), d.kind) << d.name;
    });
    // numpy's name is its kind and width: float32, int8, uint64.
    const std::string prefix = d.kind == 'f' ? "float" : d.kind == 'i' ? "int" : "uint";
    EXPECT_EQ(d.numpy_name, prefix + std::to_string(8 * d.size)) << d.name;
  }
  EXPECT_FALSE(dtype_valid(0));
  EXPECT_FALSE(dtype_valid(uint8_t(std::size(dtype_table) + 1)));
  EXPECT_FALSE(dtype_from_name("f16"));
  EXPECT_STREQ(dtype_name(DType(0)), "?");
  EXPECT_THROW(dtype_size(DType(0)), FormatError);
}

// The codec keeps its own value types by code (codec/codec.cpp); they must be the table's.
TEST(DTypes, CodecValueTypesAreTheTables) {
  for (const DTypeInfo& d : dtype_table) {
    const codec::ValueType t = codec::value_type(uint8_t(d.dtype));
    EXPECT_EQ(t.size, d.size) << d.name;
    EXPECT_EQ(t.is_float, d.kind == 'f') << d.name;
    EXPECT_EQ(t.is_signed, d.kind != 'u') << d.name;
  }
}

TEST(DTypes, FortranConstantsAreTheTables) {
  const std::string f90 = source_file("cpp/motes/capi/motes.f90");
#define MOTES_CHECK_FORTRAN_DTYPE(name, code, type, numpy_name, c_name) \
  EXPECT_TRUE(declares(f90, #c_name, code)) << "motes.f90 lacks " #c_name " = " #code;
  MOTES_DTYPES(MOTES_CHECK_FORTRAN_DTYPE)
#undef MOTES_CHECK_FORTRAN_DTYPE
}

TEST(Errors, FortranStatusesAreTheTables) {
  const std::string f90 = source_file("cpp/motes/capi/motes.f90");
  EXPECT_TRUE(declares(f90, "MOTES_OK", 0));
  for (const ErrorKindInfo& k : error_kinds)
    EXPECT_TRUE(declares(f90, k.c_status, k.code)) << "motes.f90 lacks " << k.c_status << " = " << k.code;
}
