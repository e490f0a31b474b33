// The field spec (checks, its JSON) and reading field files, whole or in parts; writing is in
// file_write.cpp (fields/file.hpp).
#include "motes/fields/file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "motes/core/errors.hpp"
#include "motes/core/text.hpp"
#include "motes/core/threads.hpp"
#include "motes/fields/file_area.hpp"
#include "motes/io/files.hpp"

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


void FieldFile::fail(const std::string& what, size_t part) const {
  throw FormatError(parts_.at(part).source->name() + ": " + what);
}

std::shared_ptr<FieldFile> FieldFile::open(const std::string& path) { return open(open_file_source(path, "field file")); }

std::shared_ptr<FieldFile> FieldFile::open(std::shared_ptr<const ByteSource> source) {
  std::vector<std::shared_ptr<const ByteSource>> parts{std::move(source)};
  return open(std::move(parts));
}

std::shared_ptr<FieldFile> FieldFile::open(const std::vector<std::string>& part_paths) {
  std::vector<std::shared_ptr<const ByteSource>> parts;
  for (const std::string& p : part_paths) parts.push_back(open_file_source(p, "field file"));
  return open(std::move(parts));
}

std::shared_ptr<FieldFile> FieldFile::open(std::vector<std::shared_ptr<const ByteSource>> parts) {
  if (parts.empty()) throw UsageError("a field needs at least one file");
  return std::shared_ptr<FieldFile>(new FieldFile(std::move(parts)));
}

FieldFile::FieldFile(std::vector<std::shared_ptr<const ByteSource>> sources) : order_(Bitmask::guess({1, 1, 1}, 1)) {
  parts_.resize(sources.size());
  for (size_t k = 0; k < sources.size(); ++k) open_part(k, std::move(sources[k]));
  // The parts, in order, hold every block once.
  uint64_t next = 0;
  for (size_t k = 0; k < parts_.size(); ++k) {
    const PartInfo& p = parts_[k].info;
    if (p.count != parts_.size() || p.index != k)
      fail("is part " + std::to_string(p.index) + " of " + std::to_string(p.count) + ", expected part " + std::to_string(k) +
               " of " + std::to_string(parts_.size()),
           k);
    if (p.first_block != next) fail("starts at block " + std::to_string(p.first_block) + ", expected " + std::to_string(next), k);
    next += p.block_count;
  }
  if (next != blocks_) fail("the parts hold " + std::to_string(next) + " of the field's " + std::to_string(blocks_) + " blocks");
  ranges_.clear();
  for (size_t c = 0; c < spec_.component_count(); ++c) ranges_.push_back(range_of_blocks(block_min_[c], block_max_[c]));
}

void FieldFile::open_part(size_t k, std::shared_ptr<const ByteSource> source) {
  Part& part = parts_[k];
  part.source = std::move(source);
  part.container = std::make_unique<container::Reader>(part.source, kMagic, kVersionMajor, "field file");
  auto bad = [&](const std::string& what) { fail(what, k); };
  const container::Header& header = part.container->header();
  FieldArea area;
  std::memcpy(&area, header.kind_area, sizeof area);
  if (area.ndim < 1 || area.ndim > 3) bad("has " + std::to_string(area.ndim) + " axes");
  if (!dtype_valid(area.dtype)) bad("has unknown dtype code " + std::to_string(area.dtype));
  if (area.centering > 1) bad("has unknown centering " + std::to_string(area.centering));
  if (area.component_count < 1 || area.component_count > kMaxComponents) bad("has " + std::to_string(area.component_count) + " components");
  if (area.block_bits < kMinBlockBits || area.block_bits > kMaxBlockBits) bad("has blocks of 2^" + std::to_string(area.block_bits) + " samples");
  uint64_t product = 1;
  for (int a = 0; a < 3; ++a) {
    if (area.dims[a] == 0 || area.dims[a] > (uint64_t(1) << 40) || (a >= int(area.ndim) && area.dims[a] != 1))
      bad("has dims " + std::to_string(area.dims[0]) + " x " + std::to_string(area.dims[1]) + " x " + std::to_string(area.dims[2]));
    product *= area.dims[a];
  }
  if (product != area.sample_count) bad("sample count does not match its dims");
  FieldSpec spec;
  spec.ndim = int(area.ndim);
  spec.dims = {area.dims[0], area.dims[1], area.dims[2]};
  spec.dtype = DType(area.dtype);
  spec.centering = Centering(area.centering);
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  if (bitmask.maxh() != area.maxh) bad("has maxh " + std::to_string(area.maxh) + ", its dims give " + std::to_string(bitmask.maxh()));
  const uint64_t per_block = std::min<uint64_t>(uint64_t(1) << area.block_bits, uint64_t(1) << bitmask.maxh());
  const uint64_t all_blocks = (uint64_t(1) << bitmask.maxh()) / per_block;

  // Which blocks this file holds (docs/format.md §14.7).
  const bool parted = header.required_features & container::kFeatureFieldParts;
  if (parted) {
    if (header.version_minor < 1) bad("is a part of a field, which version 1.0 files cannot be");
    if (area.part_count < 2 || area.part_count > kMaxParts || area.part_index >= area.part_count)
      bad("is part " + std::to_string(area.part_index) + " of " + std::to_string(area.part_count));
    if (area.block_count == 0 || area.first_block >= all_blocks || area.block_count > all_blocks - area.first_block)
      bad("holds blocks " + std::to_string(area.first_block) + " + " + std::to_string(area.block_count) + " of " +
          std::to_string(all_blocks));
    part.info = PartInfo{area.part_index, area.part_count, area.first_block, area.block_count};
  } else {
    if (area.part_index || area.part_count || area.first_block || area.block_count) bad("has part fields but is not a part");
    part.info = PartInfo{0, 1, 0, all_blocks};
  }

  const auto& sections = part.container->sections();
  const container::SectionEntry* meta = nullptr;
  for (const auto& e : sections)
    if (e.kind == kMeta) {
      if (meta) bad("has two meta sections");
      meta = &e;
    }
  if (!meta) bad("has no meta section");
  const std::string meta_text = part.container->section(size_t(meta - sections.data()), "meta section", uint64_t(1) << 30);
  if (k > 0) {
    // Every part describes the same field, in the same words.
    if (meta_text != meta_ || spec.dims != spec_.dims || spec.ndim != spec_.ndim || spec.dtype != spec_.dtype ||
        spec.centering != spec_.centering || int(area.block_bits) != block_bits_ || area.component_count != spec_.component_count())
      bad("is a part of another field than part 0 (" + parts_[0].source->name() + ")");
  } else {
    try {
      const nlohmann::json j = nlohmann::json::parse(meta_text);
      spec.name = j.at("name").get<std::string>();
      spec.components = j.at("components").get<std::vector<std::string>>();
      spec.unit = j.at("unit").get<std::string>();
      spec.attributes = j.at("attributes");
      if (j.contains("tolerance")) spec.tolerance = j.at("tolerance").get<double>();
      // A geometry other than Cartesian requires field-geometry, so that a reader that does
      // not know it refuses the file rather than read it as a Cartesian grid (§14.9).
      const bool geometry_feature = header.required_features & container::kFeatureFieldGeometry;
      if (j.contains("geometry")) {
        std::string problem;
        spec.geometry = Geometry::of(j.at("geometry"), problem);
        if (!problem.empty()) bad("meta section: " + problem);
        if (!geometry_feature) bad("meta section gives geometry " + std::string(spec.geometry.name()) + " but the file does not require field-geometry");
      } else if (geometry_feature) {
        bad("requires field-geometry but its meta section gives no geometry");
      }
      if (j.contains("coords")) {
        const auto& c = j.at("coords");
        if (!c.is_array() || c.size() != size_t(spec.ndim)) bad("meta section: coords do not match the axes");
        for (int a = 0; a < spec.ndim; ++a) spec.coords[size_t(a)] = c[size_t(a)].get<std::vector<double>>();
      } else {
        const auto o = j.at("origin").get<std::vector<double>>(), s = j.at("spacing").get<std::vector<double>>();
        if (o.size() != size_t(spec.ndim) || s.size() != size_t(spec.ndim)) bad("meta section: origin or spacing do not match the axes");
        for (int a = 0; a < spec.ndim; ++a) spec.origin[size_t(a)] = o[size_t(a)], spec.spacing[size_t(a)] = s[size_t(a)];
      }
      if (j.at("dtype").get<std::string>() != dtype_name(spec.dtype) || j.at("ndim").get<int>() != spec.ndim ||
          j.at("centering").get<std::string>() != centering_name(spec.centering))
        bad("meta section disagrees with the header");
    } catch (const nlohmann::json::exception& e) {
      bad(std::string("meta section is not valid: ") + e.what());
    }
    try {
      spec.check();
    } catch (const UsageError& e) {
      bad(std::string("meta section: ") + e.what());
    }
    if (spec.component_count() != area.component_count) bad("meta section names another number of components than the header");
    spec_ = std::move(spec);
    meta_ = meta_text;
    block_bits_ = area.block_bits;
    order_ = HzOrder(bitmask);
    per_block_ = per_block;
    blocks_ = all_blocks;
    block_min_.assign(spec_.component_count(), std::vector<double>(blocks_));
    block_max_.assign(spec_.component_count(), std::vector<double>(blocks_));
  }

  const size_t nc = area.component_count;
  const uint64_t first = part.info.first_block, blocks = part.info.block_count;
  part.values.resize(nc);
  std::vector<bool> have_values(nc, false), have_ranges(nc, false);
  for (size_t i = 0; i < sections.size(); ++i) {
    const auto& e = sections[i];
    if (e.kind == kValues) {
      if (e.column >= nc || have_values[e.column]) bad("values section of component " + std::to_string(e.column) + " is unexpected");
      if (e.storage != container::kBlocks) bad("values of component " + std::to_string(e.column) + " are not coded blocks");
      const container::SectionEntry* t = nullptr;
      for (size_t j = 0; j < sections.size(); ++j)
        if (sections[j].kind == kBlockTable && sections[j].column == i) {
          if (t) bad("block table of component " + std::to_string(e.column) + " appears twice");
          t = &sections[j];
        }
      if (!t) bad("block table of component " + std::to_string(e.column) + " is missing");
      const std::string what = "values of component " + std::to_string(e.column);
      std::string tb = part.container->section(size_t(t - sections.data()), "block table of " + what, blocks * sizeof(container::BlockEntry));
      part.values[e.column] = BlockStream::coded(part.source, what, uint8_t(spec_.dtype), blocks * per_block_, per_block_,
                                                 container::decode_block_table(tb, blocks, e, what, *part.container));
      have_values[e.column] = true;
    } else if (e.kind == kBlockRanges) {
      if (e.column >= nc || have_ranges[e.column]) bad("block ranges of component " + std::to_string(e.column) + " are unexpected");
      const std::string r = part.container->section(i, "block ranges", blocks * 16);
      if (r.size() != blocks * 16) bad("block ranges of component " + std::to_string(e.column) + " have the wrong length");
      std::memcpy(block_min_[e.column].data() + first, r.data(), blocks * 8);
      std::memcpy(block_max_[e.column].data() + first, r.data() + blocks * 8, blocks * 8);
      have_ranges[e.column] = true;
    }
  }
  for (size_t c = 0; c < nc; ++c)
    if (!have_values[c] || !have_ranges[c]) bad("component " + std::to_string(c) + " lacks its values or block ranges");
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
