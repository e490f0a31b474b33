// libFuzzer target: the expression parser accepts or rejects any text with
// motes::UsageError; accepted expressions print and re-parse to the same tree.
#include <cstdint>
#include <string>

#include "motes/expr/expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto e = motes::parse_expression(text);
    std::string printed = e->to_string();
    auto again = motes::parse_expression(printed);
    if (again->to_string() != printed) __builtin_trap();
    try {
      motes::bind_columns(*e, {"x", "y", "z", "energy", "ux"});
    } catch (const motes::UsageError&) {
    }
  } catch (const motes::UsageError&) {
  }
  return 0;
}
