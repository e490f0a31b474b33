#include "motes/particles/spec.hpp"

#include <cmath>

#include "motes/core/cpu.hpp"

namespace motes::spec {

std::string encode_schema(const std::vector<ColumnSpec>& columns, bool with_bounds) {
  std::string out;
  for (const ColumnSpec& s : columns) {
    out.push_back(char(s.dtype));
    out.push_back(char(s.index));
    uint16_t name_len = uint16_t(s.name.size());
    uint32_t unit_len = uint32_t(s.unit.size());
    out.append(reinterpret_cast<const char*>(&name_len), 2);
    out.append(reinterpret_cast<const char*>(&unit_len), 4);
    if (with_bounds) out.append(reinterpret_cast<const char*>(&s.error_bound), 8);
    out += s.name;
    out += s.unit;
  }
  return out;
}

std::string decode_schema(const unsigned char* p, const unsigned char* end, uint32_t count, bool with_bounds,
                          std::vector<ColumnSpec>& out) {
  out.clear();
  if (count == 0 || count > 65535) return "implausible column count " + std::to_string(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (end - p < 8) return "schema is truncated";
    uint8_t dtype = p[0], kind = p[1];
    uint16_t name_len;
    uint32_t unit_len;
    std::memcpy(&name_len, p + 2, 2);
    std::memcpy(&unit_len, p + 4, 4);
    p += 8;
    double bound = 0.0;
    if (with_bounds) {
      if (end - p < 8) return "schema is truncated";
      std::memcpy(&bound, p, 8);
      p += 8;
      if (!(bound >= 0.0 && bound < INFINITY)) return "schema gives an error bound that is not a finite number >= 0";
    }
    if (!dtype_valid(dtype)) return "schema names unknown dtype code " + std::to_string(dtype);
    if (kind != uint8_t(IndexKind::none) && kind != uint8_t(IndexKind::quantile))
      return "schema names unknown index kind " + std::to_string(kind);
    if (uint64_t(end - p) < uint64_t(name_len) + unit_len) return "schema is truncated";
    ColumnSpec c;
    c.dtype = DType(dtype);
    c.index = IndexKind(kind);
    c.error_bound = bound;
    c.name.assign(reinterpret_cast<const char*>(p), name_len);
    c.unit.assign(reinterpret_cast<const char*>(p + name_len), unit_len);
    p += name_len + unit_len;
    out.push_back(std::move(c));
  }
  if (p != end) return "schema has " + std::to_string(end - p) + " trailing bytes";
  return check_schema(out);
}

std::string check_schema(const std::vector<ColumnSpec>& columns) {
  for (size_t i = 0; i < columns.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (columns[j].name == columns[i].name) return "schema names column '" + columns[i].name + "' twice";
  for (const char* axis : kPositionColumns) {
    const ColumnSpec* found = nullptr;
    for (const ColumnSpec& c : columns)
      if (c.name == axis) found = &c;
    if (!found) return std::string("position column '") + axis + "' is missing";
    if (found->dtype != DType::f32 && found->dtype != DType::f64)
      return std::string("position column '") + axis + "' is not f32/f64";
  }
  return {};
}

std::string section_kind_name(uint32_t kind) {
  switch (kind) {
    case kSchema: return "schema";
    case kNodes: return "nodes";
    case kColumn: return "column data";
    case kNodeRanges: return "node ranges";
    case kBitmaps: return "bitmaps";
    case kQuantileEdges: return "quantile edges";
    case kQuantileCodes: return "quantile codes";
    case kBlockSums: return "block checksums";
    case kBlockTable: return "block table";
    case kIdKeys: return "id index keys";
    case kIdRows: return "id index rows";
    case kIdFences: return "id index fences";
    case kTailValues: return "tail index values";
    case kTailRows: return "tail index rows";
    case kTailBounds: return "tail index bounds";
    case kTailCoverValues: return "tail cover values";
    case kTailCover: return "tail cover";
    case kDerived: return "derived quantity";
    case kDerivedTailValues: return "derived tail values";
    case kDerivedTailRows: return "derived tail rows";
    case kDerivedTailBounds: return "derived tail bounds";
    case kDerivedTailCoverValues: return "derived tail cover values";
    case kDerivedTailCover: return "derived tail cover";
  }
  return "section kind " + std::to_string(kind);
}

// AVX2 (core/cpu.hpp): per-lane shifts (vpsllvd) and 4 doubles a division. The same IEEE
// operations in the same order (a subtraction, a division, a multiplication), so the same bins.
uint32_t bitmap_bits(const float* v, uint64_t n, double lo, double width) {
  return with_avx2([&]() MOTES_INLINE { return bitmap_bits_loop(v, n, lo, width); });
}
uint32_t bitmap_bits(const double* v, uint64_t n, double lo, double width) {
  return with_avx2([&]() MOTES_INLINE { return bitmap_bits_loop(v, n, lo, width); });
}
uint32_t bitmap_bits_portable(const float* v, uint64_t n, double lo, double width) {
  return bitmap_bits_loop(v, n, lo, width);
}
uint32_t bitmap_bits_portable(const double* v, uint64_t n, double lo, double width) {
  return bitmap_bits_loop(v, n, lo, width);
}

}  // namespace motes::spec
