// Opening field files, whole or in parts (fields/file.hpp): each part's header area, the
// blocks it holds, its meta section (the spec) and its sections, checked on their own and
// against part 0 (docs/format.md §14). The spec's checks and reading samples are in file.cpp.
#include <algorithm>
#include <cstring>

#include "motes/core/errors.hpp"
#include "motes/fields/file.hpp"
#include "motes/fields/file_area.hpp"
#include "motes/io/files.hpp"

namespace motes::fields {

// Opens part k of a field, phase by phase (run): the header area checked and the grid it
// gives, the blocks the part holds, its meta section (part 0's sets the field's spec, the
// other parts must repeat it), then its values and block ranges. Every problem is a
// FormatError naming the part's file (FieldFile::fail).
class FieldFile::PartOpen {
 public:
  PartOpen(FieldFile& f, size_t k) : f_(f), k_(k), part_(f.parts_[k]) {}
  void run(std::shared_ptr<const ByteSource> source);

 private:
  [[noreturn]] void bad(const std::string& what) const { f_.fail(what, k_); }
  const container::Header& header() const { return part_.container->header(); }
  void check_area();
  void grid_of_area();
  void which_blocks();
  std::string meta_text();
  void agree_with_first(const std::string& meta);
  void spec_of_meta(const std::string& meta);
  void geometry_of_meta(const nlohmann::json& j);
  void grid_of_meta(const nlohmann::json& j);
  void set_field(const std::string& meta);
  void read_sections();
  void open_values(size_t i);
  void read_ranges(size_t i);

  FieldFile& f_;
  const size_t k_;
  Part& part_;
  FieldArea area_{};
  FieldSpec spec_;  // this part's: the grid from its header area, the rest from its meta section
  Bitmask bitmask_;
  uint64_t per_block_ = 0, all_blocks_ = 0;     // the field's samples per block and blocks
  std::vector<bool> have_values_, have_ranges_;  // per component: its sections seen
};

void FieldFile::PartOpen::run(std::shared_ptr<const ByteSource> source) {
  part_.source = std::move(source);
  part_.container = std::make_unique<container::Reader>(part_.source, kMagic, kVersionMajor, "field file");
  check_area();
  grid_of_area();
  which_blocks();
  const std::string meta = meta_text();
  if (k_ > 0) {
    agree_with_first(meta);
  } else {
    spec_of_meta(meta);
    set_field(meta);
  }
  read_sections();
}

// The header area: axes, dtype, centering, component count, block size and dims in range,
// and the sample count the product of the dims.
void FieldFile::PartOpen::check_area() {
  std::memcpy(&area_, header().kind_area, sizeof area_);
  if (area_.ndim < 1 || area_.ndim > 3) bad("has " + std::to_string(area_.ndim) + " axes");
  if (!dtype_valid(area_.dtype)) bad("has unknown dtype code " + std::to_string(area_.dtype));
  if (area_.centering > 1) bad("has unknown centering " + std::to_string(area_.centering));
  if (area_.component_count < 1 || area_.component_count > kMaxComponents) bad("has " + std::to_string(area_.component_count) + " components");
  if (area_.block_bits < kMinBlockBits || area_.block_bits > kMaxBlockBits) bad("has blocks of 2^" + std::to_string(area_.block_bits) + " samples");
  uint64_t product = 1;
  for (int a = 0; a < 3; ++a) {
    if (area_.dims[a] == 0 || area_.dims[a] > (uint64_t(1) << 40) || (a >= int(area_.ndim) && area_.dims[a] != 1))
      bad("has dims " + std::to_string(area_.dims[0]) + " x " + std::to_string(area_.dims[1]) + " x " + std::to_string(area_.dims[2]));
    product *= area_.dims[a];
  }
  if (product != area_.sample_count) bad("sample count does not match its dims");
}

// The grid of the header area (axes, dims, dtype, centering), its bitmask (whose maxh the
// area must give), and the field's blocks: the samples of one and their number.
void FieldFile::PartOpen::grid_of_area() {
  spec_.ndim = int(area_.ndim);
  spec_.dims = {area_.dims[0], area_.dims[1], area_.dims[2]};
  spec_.dtype = DType(area_.dtype);
  spec_.centering = Centering(area_.centering);
  bitmask_ = Bitmask::guess(spec_.dims, spec_.ndim);
  if (bitmask_.maxh() != area_.maxh) bad("has maxh " + std::to_string(area_.maxh) + ", its dims give " + std::to_string(bitmask_.maxh()));
  per_block_ = std::min<uint64_t>(uint64_t(1) << area_.block_bits, uint64_t(1) << bitmask_.maxh());
  all_blocks_ = (uint64_t(1) << bitmask_.maxh()) / per_block_;
}

// Which blocks this file holds (docs/format.md §14.7): a run of them in a part (feature
// field-parts, 1.1), all of them otherwise.
void FieldFile::PartOpen::which_blocks() {
  if (const uint64_t particle_only = header().required_features & container::kParticleOnlyFeatures)
    bad("requires " + container::feature_names(particle_only) + ", a feature of particle files only");
  const bool parted = header().required_features & container::kFeatureFieldParts;
  if (parted) {
    if (header().version_minor < 1) bad("is a part of a field, which version 1.0 files cannot be");
    if (area_.part_count < 2 || area_.part_count > kMaxParts || area_.part_index >= area_.part_count)
      bad("is part " + std::to_string(area_.part_index) + " of " + std::to_string(area_.part_count));
    if (area_.block_count == 0 || area_.first_block >= all_blocks_ || area_.block_count > all_blocks_ - area_.first_block)
      bad("holds blocks " + std::to_string(area_.first_block) + " + " + std::to_string(area_.block_count) + " of " +
          std::to_string(all_blocks_));
    part_.info = PartInfo{area_.part_index, area_.part_count, area_.first_block, area_.block_count};
  } else {
    if (area_.part_index || area_.part_count || area_.first_block || area_.block_count) bad("has part fields but is not a part");
    part_.info = PartInfo{0, 1, 0, all_blocks_};
  }
}

// The text of the part's one meta section.
std::string FieldFile::PartOpen::meta_text() {
  const auto& sections = part_.container->sections();
  const container::SectionEntry* meta = nullptr;
  for (const auto& e : sections)
    if (e.kind == kMeta) {
      if (meta) bad("has two meta sections");
      meta = &e;
    }
  if (!meta) bad("has no meta section");
  return part_.container->section(size_t(meta - sections.data()), "meta section", uint64_t(1) << 30);
}

// A part after the first: every part describes the same field, in the same words.
void FieldFile::PartOpen::agree_with_first(const std::string& meta) {
  const FieldSpec& first = f_.spec_;
  if (meta != f_.meta_ || spec_.dims != first.dims || spec_.ndim != first.ndim || spec_.dtype != first.dtype ||
      spec_.centering != first.centering || int(area_.block_bits) != f_.block_bits_ || area_.component_count != first.component_count())
    bad("is a part of another field than part 0 (" + f_.parts_[0].source->name() + ")");
}

// Part 0: the rest of the spec from the meta section, which must agree with the header
// area; then the spec's own checks, and its number of stored arrays that of the area.
void FieldFile::PartOpen::spec_of_meta(const std::string& meta) {
  try {
    const nlohmann::json j = nlohmann::json::parse(meta);
    spec_.name = j.at("name").get<std::string>();
    spec_.components = j.at("components").get<std::vector<std::string>>();
    spec_.unit = j.at("unit").get<std::string>();
    spec_.attributes = j.at("attributes");
    if (j.contains("tolerance")) spec_.tolerance = j.at("tolerance").get<double>();
    geometry_of_meta(j);
    grid_of_meta(j);
    if (j.at("dtype").get<std::string>() != dtype_name(spec_.dtype) || j.at("ndim").get<int>() != spec_.ndim ||
        j.at("centering").get<std::string>() != centering_name(spec_.centering))
      bad("meta section disagrees with the header");
  } catch (const nlohmann::json::exception& e) {
    bad(std::string("meta section is not valid: ") + e.what());
  }
  try {
    spec_.check();
  } catch (const UsageError& e) {
    bad(std::string("meta section: ") + e.what());
  }
  if (spec_.component_count() != area_.component_count) bad("meta section names another number of components than the header");
}

// The meta section's geometry. One other than Cartesian requires field-geometry, so that a
// reader that does not know it refuses the file rather than read it as a Cartesian grid (§14.9).
void FieldFile::PartOpen::geometry_of_meta(const nlohmann::json& j) {
  const bool geometry_feature = header().required_features & container::kFeatureFieldGeometry;
  if (j.contains("geometry")) {
    std::string problem;
    spec_.geometry = Geometry::of(j.at("geometry"), problem);
    if (!problem.empty()) bad("meta section: " + problem);
    if (!geometry_feature) bad("meta section gives geometry " + std::string(spec_.geometry.name()) + " but the file does not require field-geometry");
  } else if (geometry_feature) {
    bad("requires field-geometry but its meta section gives no geometry");
  }
}

// The meta section's grid: coordinates per axis (rectilinear), or origin and spacing.
void FieldFile::PartOpen::grid_of_meta(const nlohmann::json& j) {
  if (j.contains("coords")) {
    const auto& c = j.at("coords");
    if (!c.is_array() || c.size() != size_t(spec_.ndim)) bad("meta section: coords do not match the axes");
    for (int a = 0; a < spec_.ndim; ++a) spec_.coords[size_t(a)] = c[size_t(a)].get<std::vector<double>>();
  } else {
    const auto o = j.at("origin").get<std::vector<double>>(), s = j.at("spacing").get<std::vector<double>>();
    if (o.size() != size_t(spec_.ndim) || s.size() != size_t(spec_.ndim)) bad("meta section: origin or spacing do not match the axes");
    for (int a = 0; a < spec_.ndim; ++a) spec_.origin[size_t(a)] = o[size_t(a)], spec_.spacing[size_t(a)] = s[size_t(a)];
  }
}

// Part 0 sets the field: its spec, meta text, block size, HZ order and blocks, and room for
// every block's range (each part fills its own).
void FieldFile::PartOpen::set_field(const std::string& meta) {
  f_.spec_ = std::move(spec_);
  f_.meta_ = meta;
  f_.block_bits_ = area_.block_bits;
  f_.order_ = HzOrder(bitmask_);
  f_.per_block_ = per_block_;
  f_.blocks_ = all_blocks_;
  f_.block_min_.assign(f_.spec_.component_count(), std::vector<double>(f_.blocks_));
  f_.block_max_.assign(f_.spec_.component_count(), std::vector<double>(f_.blocks_));
}

// The part's sections: every component's values and block ranges, once each.
void FieldFile::PartOpen::read_sections() {
  const size_t nc = area_.component_count;
  const auto& sections = part_.container->sections();
  part_.values.resize(nc);
  have_values_.assign(nc, false);
  have_ranges_.assign(nc, false);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].kind == kValues) open_values(i);
    else if (sections[i].kind == kBlockRanges) read_ranges(i);
  }
  for (size_t c = 0; c < nc; ++c)
    if (!have_values_[c] || !have_ranges_[c]) bad("component " + std::to_string(c) + " lacks its values or block ranges");
}

// Values section i: a component's coded blocks, through the one block table that points to it.
void FieldFile::PartOpen::open_values(size_t i) {
  const auto& sections = part_.container->sections();
  const auto& e = sections[i];
  const uint64_t blocks = part_.info.block_count;
  if (e.column >= have_values_.size() || have_values_[e.column]) bad("values section of component " + std::to_string(e.column) + " is unexpected");
  if (e.storage != container::kBlocks) bad("values of component " + std::to_string(e.column) + " are not coded blocks");
  const container::SectionEntry* t = nullptr;
  for (size_t j = 0; j < sections.size(); ++j)
    if (sections[j].kind == kBlockTable && sections[j].column == i) {
      if (t) bad("block table of component " + std::to_string(e.column) + " appears twice");
      t = &sections[j];
    }
  if (!t) bad("block table of component " + std::to_string(e.column) + " is missing");
  const std::string what = "values of component " + std::to_string(e.column);
  std::string tb = part_.container->section(size_t(t - sections.data()), "block table of " + what, blocks * sizeof(container::BlockEntry));
  part_.values[e.column] = BlockStream::coded(part_.source, what, uint8_t(f_.spec_.dtype), blocks * f_.per_block_, f_.per_block_,
                                              container::decode_block_table(tb, blocks, e, what, *part_.container));
  part_.values[e.column].set_cache_key(content_cache_key(*part_.source, part_.container->header().header_checksum), i);
  have_values_[e.column] = true;
}

// Block ranges section i: a component's per-block minima then maxima, into the field's.
void FieldFile::PartOpen::read_ranges(size_t i) {
  const auto& e = part_.container->sections()[i];
  const uint64_t first = part_.info.first_block, blocks = part_.info.block_count;
  if (e.column >= have_ranges_.size() || have_ranges_[e.column]) bad("block ranges of component " + std::to_string(e.column) + " are unexpected");
  const std::string r = part_.container->section(i, "block ranges", blocks * 16);
  if (r.size() != blocks * 16) bad("block ranges of component " + std::to_string(e.column) + " have the wrong length");
  std::memcpy(f_.block_min_[e.column].data() + first, r.data(), blocks * 8);
  std::memcpy(f_.block_max_[e.column].data() + first, r.data() + blocks * 8, blocks * 8);
  have_ranges_[e.column] = true;
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

void FieldFile::open_part(size_t k, std::shared_ptr<const ByteSource> source) { PartOpen(*this, k).run(std::move(source)); }

}  // namespace motes::fields
