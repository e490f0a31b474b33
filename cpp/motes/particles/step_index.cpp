#include "motes/particles/step_index.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "motes/io/files.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

constexpr char kIndexMagic[8] = {'M', 'O', 'T', 'E', 'S', 'I', 'D', 'X'};
constexpr uint16_t kIndexMajor = 1, kIndexMinor = 0;
constexpr uint32_t kIndexHeaderBytes = 128;

#pragma pack(push, 1)
struct IndexHeader {
  char magic[8];
  uint16_t version_major, version_minor;
  uint32_t header_bytes;
  uint64_t particle_count;
  uint32_t column_count, part_count, node_count, schema_bytes;
  double bounds_lo[3], bounds_hi[3];
  uint64_t body_bytes;
  uint64_t body_checksum;
  uint8_t reserved[16];
  uint64_t header_checksum;  // XXH3 of bytes [0, 120)
};
struct PartRecord {
  uint64_t count, file_bytes;
  double lo[3], hi[3];
};
struct NodeRecord {
  uint32_t first_part, part_count, subtree_end, reserved;
  uint64_t count;
  double lo[3], hi[3];
};
struct RangeRecord {
  double min, max;
  uint64_t nan_count;
};
#pragma pack(pop)
static_assert(sizeof(IndexHeader) == kIndexHeaderBytes);
static_assert(sizeof(PartRecord) == 64 && sizeof(NodeRecord) == 72 && sizeof(RangeRecord) == 24);

template <class T>
void append(std::string& out, const T* v, size_t n) {
  out.append(reinterpret_cast<const char*>(v), n * sizeof(T));
}

void pad8(std::string& s) {
  while (s.size() % 8) s.push_back('\0');
}

Box merge(const Box& a, const Box& b) {
  Box m;
  for (int k = 0; k < 3; ++k) m.lo[k] = std::min(a.lo[k], b.lo[k]), m.hi[k] = std::max(a.hi[k], b.hi[k]);
  return m;
}

// The global bins a part's root bitmap (bins over its own [lo, hi]) may touch. Each
// local bin is widened by one global bin on both sides: rounding in the bin formula
// must never drop a value, and a bit too many only costs an unpruned file.
uint32_t remap_bits(uint32_t bits, double lo, double hi, double g0, double g1) {
  if (!bits) return 0;
  if (!(hi > lo)) {
    uint32_t b = spec::bitmap_bin(lo, g0, g1);
    return 1u << b;
  }
  uint32_t out = 0;
  const double w = (hi - lo) / spec::kBitmapBins;
  for (uint32_t i = 0; i < spec::kBitmapBins; ++i) {
    if (!(bits >> i & 1)) continue;
    uint32_t b0 = spec::bitmap_bin(lo + w * i, g0, g1), b1 = spec::bitmap_bin(i + 1 == spec::kBitmapBins ? hi : lo + w * (i + 1), g0, g1);
    b0 = b0 ? b0 - 1 : 0;
    b1 = std::min(b1 + 1, spec::kBitmapBins - 1);
    for (uint32_t b = b0; b <= b1; ++b) out |= 1u << b;
  }
  return out;
}

// A balanced binary tree over parts [b, e) in preorder. Parts come in the order of
// the aggregation tree's leaves (depth-first), so neighbours are close in space.
void build_nodes(std::vector<IndexNode>& nodes, const std::vector<PartSummary>& parts, uint32_t b, uint32_t e) {
  size_t me = nodes.size();
  nodes.emplace_back();
  nodes[me].first_part = b;
  nodes[me].part_count = e - b;
  if (e - b > 1) {
    uint32_t mid = b + (e - b) / 2;
    build_nodes(nodes, parts, b, mid);
    build_nodes(nodes, parts, mid, e);
  }
  nodes[me].subtree_end = uint32_t(nodes.size());
  nodes[me].count = 0;
  nodes[me].bounds = parts[b].bounds;
  for (uint32_t k = b; k < e; ++k) {
    nodes[me].count += parts[k].count;
    nodes[me].bounds = merge(nodes[me].bounds, parts[k].bounds);
  }
}

// Every part has the schema's columns and at least one particle.
void check_parts(const std::vector<ColumnSpec>& schema, const std::vector<PartSummary>& parts) {
  if (parts.empty()) throw UsageError("a step index needs at least one part");
  for (size_t k = 0; k < parts.size(); ++k)
    if (parts[k].columns.size() != schema.size() || parts[k].count == 0)
      throw UsageError("step index: part " + std::to_string(k) + " does not match the schema or is empty");
}

// Global ranges over the parts' non-NaN values, and the NaN counts.
std::vector<RangeRecord> global_ranges(const std::vector<PartSummary>& parts, size_t ncol) {
  std::vector<RangeRecord> global(ncol);
  std::vector<bool> any(ncol, false);
  for (const PartSummary& p : parts)
    for (size_t c = 0; c < ncol; ++c) {
      const ColumnSummary& s = p.columns[c];
      global[c].nan_count += s.nan_count;
      if (!s.root_bits) continue;
      if (!any[c]) global[c].min = s.min, global[c].max = s.max, any[c] = true;
      global[c].min = std::min(global[c].min, s.min);
      global[c].max = std::max(global[c].max, s.max);
    }
  return global;
}

// Per column and node: min, max and bits over the global range.
struct NodeRanges {
  std::vector<std::vector<double>> min, max;
  std::vector<std::vector<uint32_t>> bits;
};

// The node ranges: the leaves' from their parts (bits remapped to the global range), then
// the inner nodes' bottom-up from their two children.
NodeRanges node_ranges(const std::vector<IndexNode>& nodes, const std::vector<PartSummary>& parts,
                       const std::vector<RangeRecord>& global) {
  const size_t ncol = global.size(), nn = nodes.size();
  NodeRanges out;
  out.min.assign(ncol, std::vector<double>(nn));
  out.max.assign(ncol, std::vector<double>(nn));
  out.bits.assign(ncol, std::vector<uint32_t>(nn));
  auto &nmin = out.min, &nmax = out.max;
  auto& nbits = out.bits;
  for (size_t i = nn; i-- > 0;) {
    const IndexNode& n = nodes[i];
    for (size_t c = 0; c < ncol; ++c) {
      if (n.is_leaf()) {
        const ColumnSummary& s = parts[n.first_part].columns[c];
        nmin[c][i] = s.min, nmax[c][i] = s.max;
        nbits[c][i] = remap_bits(s.root_bits, s.min, s.max, global[c].min, global[c].max);
        continue;
      }
      size_t l = i + 1, r = nodes[l].subtree_end;
      bool seen = false;
      for (size_t ch : {l, r}) {
        if (!nbits[c][ch]) continue;
        nmin[c][i] = seen ? std::min(nmin[c][i], nmin[c][ch]) : nmin[c][ch];
        nmax[c][i] = seen ? std::max(nmax[c][i], nmax[c][ch]) : nmax[c][ch];
        seen = true;
      }
      nbits[c][i] = nbits[c][l] | nbits[c][r];
    }
  }
  return out;
}

// The body: the schema (its length into schema_bytes), the global ranges, the part and
// node records, then per column its node minima, maxima and bits; each padded to 8 bytes.
std::string encode_body(const std::vector<ColumnSpec>& schema, const std::vector<RangeRecord>& global,
                        const std::vector<PartSummary>& parts, const std::vector<IndexNode>& nodes, const NodeRanges& ranges,
                        uint32_t& schema_bytes) {
  std::string body = spec::encode_schema(schema, false);
  schema_bytes = uint32_t(body.size());
  pad8(body);
  append(body, global.data(), global.size());
  for (const PartSummary& p : parts) {
    PartRecord r{p.count, p.file_bytes, {}, {}};
    for (int a = 0; a < 3; ++a) r.lo[a] = p.bounds.lo[a], r.hi[a] = p.bounds.hi[a];
    append(body, &r, 1);
  }
  for (const IndexNode& n : nodes) {
    NodeRecord r{n.first_part, n.part_count, n.subtree_end, 0, n.count, {}, {}};
    for (int a = 0; a < 3; ++a) r.lo[a] = n.bounds.lo[a], r.hi[a] = n.bounds.hi[a];
    append(body, &r, 1);
  }
  for (size_t c = 0; c < global.size(); ++c) {
    append(body, ranges.min[c].data(), nodes.size());
    append(body, ranges.max[c].data(), nodes.size());
    append(body, ranges.bits[c].data(), nodes.size());
    pad8(body);
  }
  return body;
}

// The header of `body`: counts, the root's particles and bounds, both checksums.
IndexHeader index_header(const std::string& body, uint32_t schema_bytes, size_t ncol, size_t nparts,
                         const std::vector<IndexNode>& nodes) {
  IndexHeader h{};
  std::memcpy(h.magic, kIndexMagic, 8);
  h.version_major = kIndexMajor;
  h.version_minor = kIndexMinor;
  h.header_bytes = kIndexHeaderBytes;
  h.particle_count = nodes[0].count;
  h.column_count = uint32_t(ncol);
  h.part_count = uint32_t(nparts);
  h.node_count = uint32_t(nodes.size());
  h.schema_bytes = schema_bytes;
  for (int a = 0; a < 3; ++a) h.bounds_lo[a] = nodes[0].bounds.lo[a], h.bounds_hi[a] = nodes[0].bounds.hi[a];
  h.body_bytes = body.size();
  h.body_checksum = spec::checksum(body.data(), body.size());
  h.header_checksum = spec::checksum(&h, offsetof(IndexHeader, header_checksum));
  return h;
}

uint64_t up8(uint64_t v) { return (v + 7) / 8 * 8; }

// Decodes a step index file's bytes in the order of the file: the header (checked against
// the body's size and checksum), then the body's schema and global ranges, parts, nodes (the
// tree write() builds over the parts) and per column node ranges. Every problem is a
// FormatError naming the file.
class IndexDecoder {
 public:
  IndexDecoder(const std::string& path, const std::string& bytes) : path_(path), bytes_(bytes) {}
  const IndexHeader& read_header();
  std::vector<ColumnIndex> columns();
  std::vector<IndexPart> parts();
  std::vector<IndexNode> nodes(const std::vector<IndexPart>& parts);
  void node_ranges(std::vector<ColumnIndex>& columns);

 private:
  [[noreturn]] void fail(const std::string& what) const { throw FormatError(path_ + ": " + what); }
  void check_sizes();
  template <class T>
  T next() {
    T r;
    std::memcpy(&r, p_, sizeof r);
    p_ += sizeof r;
    return r;
  }

  const std::string& path_;
  const std::string& bytes_;
  IndexHeader h_{};
  const unsigned char* body_ = nullptr;
  const unsigned char* p_ = nullptr;  // the next record
};

// The header: magic, version, checksum, sizes; the body's checksum.
const IndexHeader& IndexDecoder::read_header() {
  if (bytes_.size() < kIndexHeaderBytes)
    fail("file is " + std::to_string(bytes_.size()) + " bytes, shorter than the 128-byte step index header");
  std::memcpy(&h_, bytes_.data(), sizeof h_);
  if (std::memcmp(h_.magic, kIndexMagic, 8) != 0) fail("not a motes step index (bad magic)");
  if (h_.version_major != kIndexMajor)
    fail("step index version " + std::to_string(h_.version_major) + "." + std::to_string(h_.version_minor) +
         " is not supported (this motes reads " + std::to_string(kIndexMajor) + ".x)");
  if (spec::kCheckSums && h_.header_checksum != spec::checksum(&h_, offsetof(IndexHeader, header_checksum)))
    fail("header checksum mismatch");
  if (h_.header_bytes != kIndexHeaderBytes) fail("unexpected header size " + std::to_string(h_.header_bytes));
  if (h_.body_bytes != bytes_.size() - kIndexHeaderBytes)
    fail("body is " + std::to_string(bytes_.size() - kIndexHeaderBytes) + " bytes, header says " +
         std::to_string(h_.body_bytes) + " (truncated?)");
  body_ = reinterpret_cast<const unsigned char*>(bytes_.data()) + kIndexHeaderBytes;
  if (spec::kCheckSums && h_.body_checksum != spec::checksum(body_, h_.body_bytes)) fail("body checksum mismatch");
  check_sizes();
  return h_;
}

// The counts of the header: at least one part, the nodes of a binary tree over them, and
// the body's size what they need.
void IndexDecoder::check_sizes() {
  if (h_.part_count == 0) fail("step index lists no parts");
  if (h_.node_count != 2 * uint64_t(h_.part_count) - 1)
    fail("node count " + std::to_string(h_.node_count) + " does not match " + std::to_string(h_.part_count) + " parts");
  const uint64_t ncol = h_.column_count, nn = h_.node_count, np = h_.part_count;
  const uint64_t need = up8(h_.schema_bytes) + ncol * sizeof(RangeRecord) + np * sizeof(PartRecord) +
                        nn * sizeof(NodeRecord) + ncol * up8(nn * 20);
  if (ncol > 65535 || need != h_.body_bytes)
    fail("body size " + std::to_string(h_.body_bytes) + " does not match its " + std::to_string(ncol) + " columns, " +
         std::to_string(np) + " parts and " + std::to_string(nn) + " nodes");
}

// The columns: their specs (the schema) and global ranges.
std::vector<ColumnIndex> IndexDecoder::columns() {
  std::vector<ColumnSpec> specs;
  std::string problem = spec::decode_schema(body_, body_ + h_.schema_bytes, h_.column_count, false, specs);
  if (!problem.empty()) fail(problem);
  p_ = body_ + up8(h_.schema_bytes);
  std::vector<ColumnIndex> columns(h_.column_count);
  for (size_t c = 0; c < columns.size(); ++c) {
    const RangeRecord r = next<RangeRecord>();
    ColumnIndex& ci = columns[c];
    ci.index = specs[c].index;
    ci.spec = specs[c];
    ci.global_min = r.min, ci.global_max = r.max, ci.nan_count = r.nan_count;
    if (!(r.min <= r.max)) fail("column '" + specs[c].name + "' has an invalid global range");
  }
  return columns;
}

// The parts: each holds particles, together the header's count.
std::vector<IndexPart> IndexDecoder::parts() {
  uint64_t total = 0;
  std::vector<IndexPart> parts(h_.part_count);
  for (IndexPart& part : parts) {
    const PartRecord r = next<PartRecord>();
    if (r.count == 0) fail("a part holds no particles");
    part.count = r.count, part.file_bytes = r.file_bytes;
    for (int a = 0; a < 3; ++a) part.bounds.lo[a] = r.lo[a], part.bounds.hi[a] = r.hi[a];
    total += r.count;
  }
  if (total != h_.particle_count)
    fail("parts hold " + std::to_string(total) + " particles, the header says " + std::to_string(h_.particle_count));
  return parts;
}

// The nodes. The tree must be the exact binary split of the parts that write() builds:
// traversals then never leave the arrays, and every part is reached exactly once.
std::vector<IndexNode> IndexDecoder::nodes(const std::vector<IndexPart>& parts) {
  std::vector<IndexNode> nodes(h_.node_count);
  for (IndexNode& n : nodes) {
    const NodeRecord r = next<NodeRecord>();
    n.first_part = r.first_part, n.part_count = r.part_count, n.subtree_end = r.subtree_end, n.count = r.count;
    for (int a = 0; a < 3; ++a) n.bounds.lo[a] = r.lo[a], n.bounds.hi[a] = r.hi[a];
  }
  std::vector<IndexNode> expect;
  {
    std::vector<PartSummary> shape(parts.size());
    for (size_t k = 0; k < parts.size(); ++k) shape[k].count = parts[k].count, shape[k].bounds = parts[k].bounds;
    build_nodes(expect, shape, 0, uint32_t(parts.size()));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const IndexNode &a = nodes[i], &b = expect[i];
    if (a.first_part != b.first_part || a.part_count != b.part_count || a.subtree_end != b.subtree_end || a.count != b.count)
      fail("node " + std::to_string(i) + " does not match the part table");
  }
  return nodes;
}

// Per column: its nodes' minima, maxima and bits.
void IndexDecoder::node_ranges(std::vector<ColumnIndex>& columns) {
  const uint64_t nn = h_.node_count;
  for (ColumnIndex& ci : columns) {
    ci.node_min.resize(nn), ci.node_max.resize(nn), ci.node_bits.resize(nn);
    std::memcpy(ci.node_min.data(), p_, nn * 8);
    std::memcpy(ci.node_max.data(), p_ + nn * 8, nn * 8);
    std::memcpy(ci.node_bits.data(), p_ + nn * 16, nn * 4);
    p_ += up8(nn * 20);
  }
}

}  // namespace

std::string StepIndex::part_path(const std::string& index_path, size_t k) {
  std::string base = index_path;
  const std::string ext = kExtension;
  if (base.size() >= ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  char buf[32];
  std::snprintf(buf, sizeof buf, ".p%06zu.mpf", k);
  return base + buf;
}

StepIndexSummary StepIndex::write(const std::string& path, const std::vector<ColumnSpec>& schema,
                           const std::vector<PartSummary>& parts, bool sync) {
  check_parts(schema, parts);
  const std::vector<RangeRecord> global = global_ranges(parts, schema.size());
  std::vector<IndexNode> nodes;
  build_nodes(nodes, parts, 0, uint32_t(parts.size()));
  uint32_t schema_bytes = 0;
  const std::string body = encode_body(schema, global, parts, nodes, node_ranges(nodes, parts, global), schema_bytes);
  const IndexHeader h = index_header(body, schema_bytes, schema.size(), parts.size(), nodes);
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes += body;
  write_file_atomic(path, bytes, sync);
  return {nodes[0].count, nodes[0].bounds, h.header_checksum};
}

std::shared_ptr<const StepIndex> StepIndex::open(const std::string& path) {
  const std::string bytes = read_regular_file(path, "step index", kMaxBytes);  // type and size checked first
  IndexDecoder d(path, bytes);
  const IndexHeader& h = d.read_header();
  auto idx = std::make_shared<StepIndex>();
  idx->path_ = path;
  idx->header_checksum_ = h.header_checksum;
  idx->count_ = h.particle_count;
  for (int a = 0; a < 3; ++a) idx->bounds_.lo[a] = h.bounds_lo[a], idx->bounds_.hi[a] = h.bounds_hi[a];
  idx->columns_ = d.columns();
  idx->parts_ = d.parts();
  idx->nodes_ = d.nodes(idx->parts_);
  d.node_ranges(idx->columns_);
  return idx;
}

}  // namespace motes
