#include "motes/fields/file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "motes/codec/codec.hpp"
#include "motes/codec/zfp.hpp"
#include "motes/core/errors.hpp"
#include "motes/core/parallel.hpp"
#include "motes/core/text.hpp"
#include "motes/io/files.hpp"

namespace motes::fields {

namespace {

#pragma pack(push, 1)
// The field file's part of the container header (docs/format.md §14.2).
struct FieldArea {
  uint64_t sample_count;  // dims[0] * dims[1] * dims[2]
  uint64_t dims[3];       // x, y, z
  uint32_t ndim;
  uint32_t component_count;
  uint8_t dtype;
  uint8_t centering;
  uint8_t block_bits;
  uint8_t maxh;
  uint32_t part_index;   // 1.1, parts: this file's run of blocks; all zero in a whole field's file
  uint32_t part_count;
  uint64_t first_block;
  uint64_t block_count;
  uint8_t zero[124];
};
#pragma pack(pop)
static_assert(sizeof(FieldArea) == container::kKindAreaBytes);

constexpr uint64_t kPage = container::kPage;
constexpr const char* kAxes = "xyz";

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Per-block minimum and maximum of the grid's samples (padding and NaN left out).
template <class T>
void block_range(const T* v, const uint8_t* inside, uint64_t n, double& lo_out, double& hi_out, uint64_t& nans) {
  // In locals (not through the references, which the compiler must then store every time),
  // in T: a comparison of T is exact, and NaN fails both.
  T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
  uint64_t valid = 0, nan = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const T x = v[i];
    const bool in = inside[i];
    if constexpr (std::is_floating_point_v<T>) nan += in && x != x;
    valid += in && x == x;
    if (in && x < lo) lo = x;
    if (in && x > hi) hi = x;
  }
  nans += nan;
  lo_out = valid ? double(lo) : std::numeric_limits<double>::infinity();
  hi_out = valid ? double(hi) : -std::numeric_limits<double>::infinity();
}

std::vector<codec::Predictor> predictors_for(codec::ValueType t) {
  std::vector<codec::Predictor> p{codec::Predictor::none, codec::Predictor::delta};
  if (t.is_float) p.push_back(codec::Predictor::xor_);
  else if (t.size > 1) p.push_back(codec::Predictor::offset);
  return p;
}

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
  return j;
}

uint64_t field_block_samples(const FieldSpec& spec, int block_bits) {
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  return std::min<uint64_t>(uint64_t(1) << block_bits, uint64_t(1) << bitmask.maxh());
}

uint64_t field_block_count(const FieldSpec& spec, int block_bits) {
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  return (uint64_t(1) << bitmask.maxh()) / field_block_samples(spec, block_bits);
}

std::vector<uint64_t> split_blocks(uint64_t blocks, uint32_t parts) {
  if (parts == 0 || parts > blocks) throw UsageError("cannot split " + std::to_string(blocks) + " blocks into " + std::to_string(parts) + " parts");
  std::vector<uint64_t> at(parts + 1);
  for (uint32_t k = 0; k <= parts; ++k) at[k] = k * (blocks / parts) + std::min<uint64_t>(k, blocks % parts);
  return at;
}

namespace {

// Fills block b's samples (per_block of them) of component c and their inside flags.
using BlockSource = std::function<void(size_t c, uint64_t b, unsigned char* values, uint8_t* inside)>;

void check_write(const FieldSpec& spec, size_t arrays, const FieldWriteOptions& options) {
  spec.check();
  const size_t nc = spec.component_count();
  if (arrays != nc)
    throw UsageError("field '" + spec.name + "' has " + std::to_string(nc) + " components, " + std::to_string(arrays) + " arrays given");
  if (options.block_bits < kMinBlockBits || options.block_bits > kMaxBlockBits)
    throw UsageError("block_bits must be in [" + std::to_string(kMinBlockBits) + ", " + std::to_string(kMaxBlockBits) + "]");
  if (options.zstd_level < -7 || options.zstd_level > 19) throw UsageError("zstd_level must be in [-7, 19]");
}

// Codes block `block` (n samples at `values`, `inside` flags) with codec::Predictor::zfp at
// the field's tolerance into `out`, and decodes it into `decoded`; false when zfp cannot take
// it or a sample of the grid comes back further than the tolerance from its value.
bool try_zfp(const FieldSpec& spec, const std::string& bitmask, int block_bits, uint64_t block, const unsigned char* values,
             const uint8_t* inside, uint64_t n, std::string& out, std::vector<unsigned char>& decoded) {
  codec::Context ctx;
  if (!codec::zfp_block_context(bitmask, block_bits, block, ctx)) return false;
  ctx.zfp_tolerance = spec.tolerance;
  const codec::ValueType type = codec::value_type(uint8_t(spec.dtype));
  std::string z;
  if (!codec::encode_zfp(type, values, n, ctx, z)) return false;
  decoded.assign(n * type.size, 0);
  if (!codec::decode(type, z.data(), z.size(), decoded.data(), n, {}).empty()) return false;
  bool ok = true;
  dispatch_dtype(spec.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* a = reinterpret_cast<const T*>(values);
    const T* d = reinterpret_cast<const T*>(decoded.data());
    for (uint64_t i = 0; i < n && ok; ++i)
      if (inside[i]) ok = std::fabs(double(d[i]) - double(a[i])) <= spec.tolerance;
  });
  if (ok) out = std::move(z);
  return ok;
}

// The blocks [part.first_block, + part.block_count) of a field, from `source`, as a field file.
FieldSummary write_blocks(const std::string& path, const FieldSpec& spec, const PartInfo& part, const BlockSource& source,
                          const FieldWriteOptions& options) {
  const size_t nc = spec.component_count();
  const unsigned threads = options.threads ? options.threads : default_threads();
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  const size_t size = dtype_size(spec.dtype);
  const codec::ValueType type = codec::value_type(uint8_t(spec.dtype));
  const uint64_t per_block = field_block_samples(spec, options.block_bits);
  const uint64_t first = part.first_block, blocks = part.block_count;
  const bool lossless = options.compression == Compression::lossless;

  // One plan per component, chosen on up to 8 blocks spread over the part.
  std::vector<codec::Plan> plans(nc);
  for (size_t c = 0; c < nc; ++c) {
    if (!lossless) {
      plans[c] = codec::Plan{codec::Predictor::none, codec::Layout::whole, {codec::Coder::raw}, options.zstd_level};
      continue;
    }
    const uint64_t nsamples = std::min<uint64_t>(blocks, 8);
    std::vector<std::vector<unsigned char>> bufs(nsamples, std::vector<unsigned char>(per_block * size));
    std::vector<uint8_t> inside(per_block);
    std::vector<codec::Sample> samples;
    for (uint64_t k = 0; k < nsamples; ++k) {
      const uint64_t b = nsamples > 1 ? k * (blocks - 1) / (nsamples - 1) : 0;
      source(c, first + b, bufs[k].data(), inside.data());
      samples.push_back({bufs[k].data(), per_block, {}});
    }
    plans[c] = codec::choose(type, predictors_for(type), samples, options.zstd_level);
  }

  AtomicFile file(path, options.sync);
  FieldSummary summary;
  summary.bitmask = bitmask.text();
  summary.ranges.assign(nc, ComponentRange{});
  std::vector<std::vector<StoredBlock>> stored(nc, std::vector<StoredBlock>(blocks));
  std::vector<std::vector<double>> bmin(nc, std::vector<double>(blocks)), bmax(nc, std::vector<double>(blocks));
  std::vector<uint64_t> nans(nc, 0);
  std::vector<std::vector<uint8_t>> zfp_blocks(nc, std::vector<uint8_t>(blocks, 0));
  const std::string bitmask_text = bitmask.text();
  uint64_t offset = kPage;
  std::vector<uint64_t> first_offset(nc), last_end(nc);
  const uint64_t window = std::max<uint64_t>(1, (uint64_t(1) << 22) / (per_block * size));  // about 4 MiB of samples
  for (size_t c = 0; c < nc; ++c) {
    first_offset[c] = offset;
    for (uint64_t w0 = 0; w0 < blocks; w0 += window) {
      const uint64_t w1 = std::min(blocks, w0 + window);
      std::vector<std::string> coded(w1 - w0);
      std::vector<uint64_t> wnans(w1 - w0, 0);
      parallel_for(w1 - w0, threads, [&](uint64_t i) {
        const uint64_t b = w0 + i;
        std::vector<unsigned char> buf(per_block * size);
        std::vector<uint8_t> inside(per_block);
        source(c, first + b, buf.data(), inside.data());
        // With a tolerance, the block as zfp stores it, when that keeps every sample of the
        // grid within the tolerance (decoded here and compared); its range is then that of
        // the values stored. Otherwise (NaN, infinities, a missed bound) the lossless plan.
        const unsigned char* ranged = buf.data();
        std::vector<unsigned char> back;
        if (spec.tolerance > 0 && try_zfp(spec, bitmask_text, options.block_bits, first + b, buf.data(), inside.data(),
                                          per_block, coded[i], back)) {
          ranged = back.data();
          zfp_blocks[c][b] = 1;
        } else {
          codec::encode(plans[c], type, buf.data(), per_block, {}, coded[i]);
        }
        dispatch_dtype(spec.dtype, [&](auto tag) {
          using T = decltype(tag);
          block_range(reinterpret_cast<const T*>(ranged), inside.data(), per_block, bmin[c][b], bmax[c][b], wnans[i]);
        });
      });
      std::string out;
      for (uint64_t i = 0; i < coded.size(); ++i) {
        stored[c][w0 + i] = StoredBlock{offset + out.size(), uint32_t(coded[i].size()), container::checksum(coded[i].data(), coded[i].size())};
        out += coded[i];
        nans[c] += wnans[i];
      }
      file.pwrite_all(out.data(), out.size(), offset);
      file.start_writeback(offset, out.size());
      offset += out.size();
      summary.stored_bytes += out.size();
    }
    last_end[c] = offset;
  }
  for (size_t c = 0; c < nc; ++c) {
    ComponentRange& r = summary.ranges[c];
    r.nan_count = nans[c];
    bool any = false;
    for (uint64_t b = 0; b < blocks; ++b)
      if (bmin[c][b] <= bmax[c][b]) {
        r.min = any ? std::min(r.min, bmin[c][b]) : bmin[c][b];
        r.max = any ? std::max(r.max, bmax[c][b]) : bmax[c][b];
        any = true;
      }
  }

  container::SectionsBuilder meta{align_up(offset, 8), true, {}, {}, 0};
  meta.add(kMeta, 0, spec_json(spec).dump());
  for (uint32_t c = 0; c < nc; ++c) {
    const uint32_t at = meta.bulk(kValues, c, container::kBlocks, first_offset[c], last_end[c] - first_offset[c]);
    meta.add(kBlockTable, at, container::encode_block_table(stored[c]));
  }
  for (uint32_t c = 0; c < nc; ++c) {
    std::string r(reinterpret_cast<const char*>(bmin[c].data()), blocks * 8);
    r.append(reinterpret_cast<const char*>(bmax[c].data()), blocks * 8);
    meta.add(kBlockRanges, c, r);
  }
  FieldArea area{};
  area.sample_count = spec.sample_count();
  for (int a = 0; a < 3; ++a) area.dims[a] = spec.dims[size_t(a)];
  area.ndim = uint32_t(spec.ndim);
  area.component_count = uint32_t(nc);
  area.dtype = uint8_t(spec.dtype);
  area.centering = uint8_t(spec.centering);
  area.block_bits = uint8_t(options.block_bits);
  area.maxh = uint8_t(bitmask.maxh());
  uint16_t minor = kWholeVersionMinor;
  for (const auto& z : zfp_blocks)
    if (std::find(z.begin(), z.end(), 1) != z.end()) {
      meta.features |= container::kFeatureZfpBlocks;
      minor = kVersionMinor;
      summary.zfp_blocks += uint64_t(std::count(z.begin(), z.end(), 1));
    }
  if (part.count > 1) {  // a whole field's file stays a 1.0 file, byte for byte
    area.part_index = part.index;
    area.part_count = part.count;
    area.first_block = part.first_block;
    area.block_count = part.block_count;
    meta.features |= container::kFeatureFieldParts;
    minor = kVersionMinor;
  }
  const container::Header h = meta.write(file, kMagic, kVersionMajor, minor, &area, sizeof area);
  summary.file_bytes = h.file_size;
  summary.data_bytes = spec.sample_count() * size * nc;
  summary.header_checksum = h.header_checksum;
  return summary;
}

}  // namespace

FieldSummary write_field_file(const std::string& path, const FieldSpec& spec, const std::vector<const void*>& values,
                              const FieldWriteOptions& options) {
  check_write(spec, values.size(), options);
  for (const void* v : values)
    if (!v) throw UsageError("field '" + spec.name + "': a component has no data pointer");
  const Bitmask bitmask = Bitmask::guess(spec.dims, spec.ndim);
  const HzOrder order(bitmask);
  const size_t size = dtype_size(spec.dtype);
  const uint64_t per_block = field_block_samples(spec, options.block_bits);
  const int block_bits = per_block == (uint64_t(1) << options.block_bits) ? options.block_bits : bitmask.maxh();
  const BlockOffsets offsets(order, block_bits, spec.dims[0], spec.dims[0] * spec.dims[1], {0, 0, 0}, bitmask.maxh());
  const PartInfo whole{0, 1, 0, field_block_count(spec, options.block_bits)};
  return write_blocks(path, spec, whole, [&](size_t c, uint64_t b, unsigned char* buf, uint8_t* inside) {
    gather_block(order, offsets, block_bits, b, values[c], spec.dims, size, buf, inside);
  }, options);
}

FieldSummary write_field_part(const std::string& path, const FieldSpec& spec, const std::vector<const void*>& hz_values,
                              const uint8_t* inside, const PartInfo& part, const FieldWriteOptions& options) {
  check_write(spec, hz_values.size(), options);
  const uint64_t blocks = field_block_count(spec, options.block_bits);
  if (part.count == 0 || part.count > kMaxParts || part.index >= part.count || part.block_count == 0 ||
      part.first_block >= blocks || part.block_count > blocks - part.first_block || (part.count == 1 && part.block_count != blocks))
    throw UsageError("field '" + spec.name + "': part " + std::to_string(part.index) + " of " + std::to_string(part.count) +
                     " (blocks " + std::to_string(part.first_block) + " + " + std::to_string(part.block_count) +
                     ") does not fit its " + std::to_string(blocks) + " blocks");
  for (const void* v : hz_values)
    if (!v) throw UsageError("field '" + spec.name + "': a component has no data pointer");
  if (!inside) throw UsageError("field '" + spec.name + "': no inside flags");
  const size_t size = dtype_size(spec.dtype);
  const uint64_t per_block = field_block_samples(spec, options.block_bits);
  return write_blocks(path, spec, part, [&](size_t c, uint64_t b, unsigned char* buf, uint8_t* in) {
    const uint64_t at = (b - part.first_block) * per_block;
    std::memcpy(buf, static_cast<const unsigned char*>(hz_values[c]) + at * size, per_block * size);
    std::memcpy(in, inside + at, per_block);
  }, options);
}

// ---- reading ------------------------------------------------------------------------------

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
  const size_t nc = spec_.component_count();
  ranges_.assign(nc, {});
  for (size_t c = 0; c < nc; ++c) {
    ComponentRange& cr = ranges_[c];
    bool any = false;
    for (uint64_t b = 0; b < blocks_; ++b)
      if (block_min_[c][b] <= block_max_[c][b]) {
        cr.min = any ? std::min(cr.min, block_min_[c][b]) : block_min_[c][b];
        cr.max = any ? std::max(cr.max, block_max_[c][b]) : block_max_[c][b];
        any = true;
      }
  }
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
