// Text in messages and metadata, the same whatever the C locale: numbers written
// exactly, bytes that are not printable UTF-8 escaped, UTF-8 validity.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>

namespace motes {

// The texts of `items`, each made by text(item), separated by ", ": the lists that
// messages name ("columns x, y, z"). An item whose text is empty adds no separator.
template <class Items, class Text>
std::string joined(const Items& items, Text&& text) {
  std::string out;
  for (const auto& item : items) {
    std::string t = text(item);
    if (!out.empty() && !t.empty()) out += ", ";
    out += t;
  }
  return out;
}
template <class Items>
std::string joined(const Items& names) {
  return joined(names, [](const auto& n) { return std::string(n); });
}

// A checksum as 16 lowercase hex digits (as manifests and messages write them).
inline std::string checksum_text(uint64_t v) {
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int k = 15; k >= 0; --k, v >>= 4) out[size_t(k)] = hex[v & 15];
  return out;
}

// A double as the shortest text that reads back exactly ("0.1", "1e+300", "nan"), whatever
// the C locale: error messages and comparisons never depend on LC_NUMERIC.
inline std::string number_text(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// The length of the valid UTF-8 sequence of a non-ASCII character at s[i], 0 when invalid.
inline size_t utf8_length(const std::string& s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (!n || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

// A name of a species or field (and so of a file in a step directory): ASCII letters,
// digits, '_', '-', '.', not starting with '.', 1 to 128 characters.
inline bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 128 || s[0] == '.') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// Words of the query language (query/expr.hpp) that cannot name a column: operators
// ("and", "or", "not", "in") and the number words ("inf", "nan").
inline constexpr const char* kReservedWords[] = {"and", "or", "not", "in", "inf", "nan"};
inline constexpr size_t kOperatorWords = 4;  // the first four

inline bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8_length(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

// Text for messages: printable characters as they are, control characters and bytes that
// are not UTF-8 as \xNN (so a message is valid UTF-8 whatever the input).
inline std::string printable(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c >= 0x80 ? utf8_length(s, i) : (c >= 0x20 && c < 0x7f);
    if (n) {
      out.append(s, i, n);
      i += n;
    } else {
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
      ++i;
    }
  }
  return out;
}

}  // namespace motes
