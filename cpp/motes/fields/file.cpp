// The field spec (checks, its JSON) and reading samples of field files, whole or in parts
// (fields/file.hpp); opening them is in file_open.cpp, writing them in file_write.cpp.
#include "motes/fields/file.hpp"

#include <algorithm>
#include <cmath>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/core/threads.hpp"

namespace motes::fields {

namespace {

constexpr const char* kAxes = "xyz";

}  // namespace

const char* centering_name(Centering c) { return c == Centering::cell ? "cell" : "node"; }

void FieldSpec::check() const {
  const std::string what = "field '" + name + "'";
  if (!valid_name(name))
    throw UsageError("field name '" + printable(name) + "' is invalid (letters, digits, '_', '-', '.', not starting with '.', at most 128)");
  if (ndim < 1 || ndim > 3) throw UsageError(what + " has " + std::to_string(ndim) + " axes (1, 2 or 3)");
  if (!dtype_valid(uint8_t(dtype))) throw UsageError(what + " has an unknown dtype");
  for (int a = 0; a < 3; ++a) {
    if (a < ndim && dims[size_t(a)] == 0) throw UsageError(what + " has no samples along " + kAxes[a]);
    if (a >= ndim && dims[size_t(a)] != 1) throw UsageError(what + ": a " + std::to_string(ndim) + "-D grid has 1 sample along " + kAxes[a]);
  }
  if (components.size() > kMaxComponents) throw UsageError(what + " has more than 64 components");
  if (geometry.kind == Geometry::theta_mode) {
    if (geometry.modes < 1 || geometry.modes > Geometry::kMaxModes)
      throw UsageError(what + ": a thetaMode field has 1 to " + std::to_string(Geometry::kMaxModes) + " modes, not " +
                       std::to_string(geometry.modes));
    if (geometry.imag != '+' && geometry.imag != '-') throw UsageError(what + ": thetaMode imag must be '+' or '-'");
    if (ndim != 2) throw UsageError(what + ": a thetaMode field is a 2-D grid (z, r), not " + std::to_string(ndim) + "-D");
    if (rectilinear()) throw UsageError(what + ": a thetaMode field is a uniform grid (origin and spacing), not coords");
    if (!(origin[1] >= 0)) throw UsageError(what + ": a thetaMode field's radial axis (its second) must start at r >= 0");
    if (component_count() > kMaxComponents)
      throw UsageError(what + ": " + std::to_string(vector_count()) + " component(s) of " + std::to_string(geometry.slots()) +
                       " mode arrays each are " + std::to_string(component_count()) + " arrays, more than 64");
  }
  for (size_t i = 0; i < components.size(); ++i) {
    if (!valid_name(components[i])) throw UsageError(what + ": component name '" + printable(components[i]) + "' is invalid");
    for (size_t j = 0; j < i; ++j)
      if (components[i] == components[j]) throw UsageError(what + ": component '" + components[i] + "' is given twice");
  }
  if (rectilinear()) {
    for (int a = 0; a < 3; ++a) {
      const auto& c = coords[size_t(a)];
      if (a >= ndim) {
        if (!c.empty()) throw UsageError(what + ": coordinates along " + kAxes[a] + " of a " + std::to_string(ndim) + "-D grid");
        continue;
      }
      if (c.size() != dims[size_t(a)])
        throw UsageError(what + ": " + std::to_string(c.size()) + " coordinates along " + kAxes[a] + " for " +
                         std::to_string(dims[size_t(a)]) + " samples");
      for (size_t i = 0; i < c.size(); ++i)
        if (!std::isfinite(c[i]) || (i && !(c[i] > c[i - 1])))
          throw UsageError(what + ": coordinates along " + kAxes[a] + " must be finite and increasing");
    }
  } else {
    for (int a = 0; a < ndim; ++a)
      if (!std::isfinite(origin[size_t(a)]) || !(spacing[size_t(a)] > 0) || !std::isfinite(spacing[size_t(a)]))
        throw UsageError(what + ": origin must be finite and spacing positive along " + kAxes[a]);
  }
  if (!valid_utf8(unit)) throw UsageError(what + ": unit is not UTF-8 text");
  if (!(tolerance >= 0) || !std::isfinite(tolerance)) throw UsageError(what + ": tolerance must be a finite number >= 0");
  if (tolerance > 0 && dtype != DType::f32 && dtype != DType::f64)
    throw UsageError(what + ": a tolerance (ZFP) needs float32 or float64 samples, not " + dtype_name(dtype));
  if (!attributes.is_object()) throw UsageError(what + ": attributes must be an object");
}

nlohmann::json spec_json(const FieldSpec& s) {
  nlohmann::json j;
  j["name"] = s.name;
  j["dtype"] = dtype_name(s.dtype);
  j["ndim"] = s.ndim;
  j["dims"] = {s.dims[0], s.dims[1], s.dims[2]};
  j["components"] = s.components;
  j["centering"] = centering_name(s.centering);
  if (s.rectilinear()) {
    nlohmann::json c = nlohmann::json::array();
    for (int a = 0; a < s.ndim; ++a) c.push_back(s.coords[size_t(a)]);
    j["coords"] = c;
  } else {
    j["origin"] = std::vector<double>(s.origin.begin(), s.origin.begin() + s.ndim);
    j["spacing"] = std::vector<double>(s.spacing.begin(), s.spacing.begin() + s.ndim);
  }
  j["unit"] = s.unit;
  j["attributes"] = s.attributes;
  if (s.tolerance > 0) j["tolerance"] = s.tolerance;  // only then: lossless files stay as they were
  if (!s.geometry.cartesian_grid()) j["geometry"] = s.geometry.json();  // likewise: Cartesian writes no key
  return j;
}

const FieldFile::Part& FieldFile::part_of(uint64_t block) const {
  auto it = std::upper_bound(parts_.begin(), parts_.end(), block,
                             [](uint64_t b, const Part& p) { return b < p.info.first_block; });
  return *(it - 1);
}

uint64_t FieldFile::stored_bytes() const {
  uint64_t n = 0;
  for (const Part& p : parts_)
    for (const BlockStream& s : p.values) n += s.stored_bytes();
  return n;
}

Region FieldFile::region(const Dims& lo, const Dims& hi, int level) const {
  Region r;
  for (size_t a = 0; a < 3; ++a) {
    r.lo[a] = std::min(lo[a], spec_.dims[a]);
    r.hi[a] = std::min(hi[a], spec_.dims[a]);
    if (r.lo[a] >= r.hi[a])
      throw UsageError("field '" + spec_.name + "': the box is empty along " + kAxes[a] + " ([" + std::to_string(lo[a]) + ", " +
                       std::to_string(hi[a]) + ") of " + std::to_string(spec_.dims[a]) + " samples)");
  }
  if (level < 0) throw UsageError("level must be >= 0, got " + std::to_string(level));
  r.level = std::min(level, levels());
  r.resolution = order_.bitmask().resolution_of_level(r.level);
  r.stride_bits = order_.bitmask().stride_bits(r.resolution);
  for (size_t a = 0; a < 3; ++a) {
    const uint64_t s = uint64_t(1) << r.stride_bits[a];
    r.first[a] = (r.lo[a] + s - 1) / s;
    r.count[a] = (r.hi[a] + s - 1) / s - r.first[a];
  }
  return r;
}

std::vector<uint64_t> FieldFile::blocks(const Region& r) const {
  return blocks_for_box(order_, block_bits_, r.resolution, r.lo, r.hi);
}

void FieldFile::read(const Region& r, size_t c, void* out, unsigned threads) const {
  if (c >= spec_.component_count()) throw UsageError("field '" + spec_.name + "' has no component " + std::to_string(c));
  const std::vector<uint64_t> bl = blocks(r);
  const uint64_t per_block = per_block_, limit = uint64_t(1) << r.resolution;
  const size_t size = dtype_size(spec_.dtype);
  // The stored bytes of the blocks, part by part (each part's blocks are one run of `bl`).
  for (size_t i = 0; i < bl.size();) {
    const Part& p = part_of(bl[i]);
    std::vector<uint64_t> want;
    for (; i < bl.size() && bl[i] < p.info.first_block + p.info.block_count; ++i) want.push_back(bl[i] - p.info.first_block);
    std::vector<ByteRange> ranges;
    p.values[c].block_ranges(want, ranges);
    p.source->will_need(ranges);
  }
  const int bb = per_block == (uint64_t(1) << block_bits_) ? block_bits_ : order_.maxh();
  std::unique_ptr<BlockOffsets> offsets;
  if (bl.size() > 4)  // the tables pay for themselves over several blocks
    offsets = std::make_unique<BlockOffsets>(order_, bb, r.count[0], r.count[0] * r.count[1], r.stride_bits, r.resolution);
  parallel_for(bl.size(), threads ? threads : default_threads(), [&](uint64_t i) {
    const uint64_t first = bl[i] * per_block, n = std::min(per_block, limit - std::min(limit, first));
    if (n == 0) return;
    const Part& p = part_of(bl[i]);
    BlockReader reader;
    const void* samples = reader.span(p.values[c], first - p.info.first_block * per_block, n);
    scatter_block(order_, offsets.get(), bb, samples, size, first, n, r.lo, r.hi, r.stride_bits, r.first, r.count, out);
  });
}

void FieldFile::verify() const {
  for (const Part& p : parts_)
    for (const BlockStream& s : p.values)
      for (uint64_t b = 0; b < s.block_count(); ++b) s.verify_block(b);
}

}  // namespace motes::fields
