#include "motes/particles/reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "motes/io/files.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {


template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A double no larger (no smaller) than the native value, so pruning stays conservative.
template <class T>
double lower_double(T v) {
  double d = double(v);
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    if (d > -9007199254740992.0 && d < 9007199254740992.0) return d;
    return std::nextafter(d, -INFINITY);
  }
  return d;
}
template <class T>
double upper_double(T v) {
  double d = double(v);
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8) {
    if (d > -9007199254740992.0 && d < 9007199254740992.0) return d;
    return std::nextafter(d, INFINITY);
  }
  return d;
}

std::string kind_name(uint32_t kind) {
  switch (kind) {
    case spec::kSchema: return "schema";
    case spec::kNodes: return "nodes";
    case spec::kColumn: return "column data";
    case spec::kNodeRanges: return "node ranges";
    case spec::kBitmaps: return "bitmaps";
    case spec::kFineEdges: return "quantile edges";
    case spec::kFineCodes: return "quantile codes";
    case spec::kBlockSums: return "block checksums";
  }
  return "section kind " + std::to_string(kind);
}

}  // namespace

std::shared_ptr<ParticleFile> ParticleFile::open(const std::string& path, bool verify) {
  std::shared_ptr<ParticleFile> f(new ParticleFile());
  f->path_ = path;
  // A regular file only (a FIFO, /dev/zero or a directory is refused before any read).
  f->fd_ = open_regular_file(path, "particle file", std::numeric_limits<uint64_t>::max(), &f->size_);
  f->parse();  // header and index sections through pread: a truncated file is an error, not SIGBUS
  if (f->size_ > 0) {
    void* m = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, f->fd_, 0);
    if (m == MAP_FAILED) throw_errno("cannot map", path);
    f->map_ = static_cast<const unsigned char*>(m);
    for (ColumnIndex& c : f->columns_) {
      if (c.data) c.data = f->map_ + reinterpret_cast<uintptr_t>(c.data);  // offsets until mapped
      if (c.codes) c.codes = f->map_ + reinterpret_cast<uintptr_t>(c.codes);
    }
  }
  if (verify) f->verify_data();
  return f;
}

ParticleFile::~ParticleFile() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void ParticleFile::check_unchanged() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw_errno("cannot stat", path_);
  if (uint64_t(st.st_size) != size_)
    fail("the file changed size while open (" + std::to_string(size_) + " -> " + std::to_string(st.st_size) +
         " bytes): another process truncated or rewrote it in place");
}

std::string ParticleFile::read_at(uint64_t offset, uint64_t length) const {
  std::string out(length, '\0');
  uint64_t done = 0;
  while (done < length) {
    ssize_t r = ::pread(fd_, out.data() + done, length - done, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw_errno("cannot read", path_);
    if (r == 0) fail("the file ends at byte " + std::to_string(offset + done) + ", inside a section (truncated while open?)");
    done += uint64_t(r);
  }
  return out;
}

void ParticleFile::fail(const std::string& what) const { throw FormatError(path_ + ": " + what); }

size_t ParticleFile::column(const std::string& name) const {
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].spec.name == name) return i;
  std::string names;
  for (const ColumnIndex& c : columns_) names += (names.empty() ? "" : ", ") + c.spec.name;
  throw UsageError("unknown column '" + name + "' (columns: " + names + ")");
}

bool ParticleFile::has_column(const std::string& name) const {
  for (const ColumnIndex& c : columns_)
    if (c.spec.name == name) return true;
  return false;
}

void ParticleFile::parse() {
  if (size_ < spec::kPage)
    fail("file is " + std::to_string(size_) + " bytes, shorter than the 4096-byte header (truncated or not a motes file)");
  spec::Header h;
  const std::string header = read_at(0, sizeof h);
  std::memcpy(&h, header.data(), sizeof h);
  if (std::memcmp(h.magic, spec::kMagic, 8) != 0) fail("not a motes particle file (bad magic)");
  if (h.version_major != spec::kVersionMajor)
    fail("format version " + std::to_string(h.version_major) + "." + std::to_string(h.version_minor) +
         " is not supported (this motes reads version " + std::to_string(spec::kVersionMajor) + ".x)");
  if (spec::kCheckSums && spec::checksum(header.data(), spec::kHeaderChecksumAt) != h.header_checksum) fail("header checksum mismatch (corrupted header)");
  major_ = h.version_major;
  minor_ = h.version_minor;
  header_checksum_ = h.header_checksum;
  if (h.file_size != size_)
    fail("file is " + std::to_string(size_) + " bytes but its header says " + std::to_string(h.file_size) +
         (size_ < h.file_size ? " (truncated)" : " (trailing bytes)"));
  if (h.header_bytes != spec::kHeaderBytes) fail("header size " + std::to_string(h.header_bytes) + " is not " + std::to_string(spec::kHeaderBytes));
  count_ = h.particle_count;
  if (count_ > size_) fail("particle count " + std::to_string(count_) + " cannot fit in a " + std::to_string(size_) + "-byte file");
  lod_count_ = h.lod_count;
  leaf_size_ = h.leaf_size;
  block_bytes_ = h.block_bytes;
  if (block_bytes_ < 4096 || block_bytes_ % 4096) fail("invalid block size " + std::to_string(block_bytes_));
  for (int a = 0; a < 3; ++a) bounds_.lo[a] = h.bounds_lo[a], bounds_.hi[a] = h.bounds_hi[a];

  if (h.section_count > (1u << 24)) fail("implausible section count " + std::to_string(h.section_count));
  uint64_t table_bytes = uint64_t(h.section_count) * sizeof(spec::SectionEntry);
  if (h.section_table_offset < spec::kPage || h.section_table_offset > size_ || table_bytes > size_ - h.section_table_offset)
    fail("section table lies outside the file");
  const std::string table_text = read_at(h.section_table_offset, table_bytes);
  if (spec::kCheckSums && spec::checksum(table_text.data(), table_bytes) != h.section_table_checksum)
    fail("section table checksum mismatch");
  std::vector<spec::SectionEntry> table(h.section_count);
  if (table_bytes) std::memcpy(table.data(), table_text.data(), table_bytes);
  // The index sections (everything but the bulk column data and codes), read once.
  std::vector<std::string> section_bytes(table.size());
  uint64_t index_read = 0;

  const spec::SectionEntry* schema = nullptr;
  const spec::SectionEntry* nodes = nullptr;
  for (size_t ti = 0; ti < table.size(); ++ti) {
    const spec::SectionEntry& e = table[ti];
    if (e.offset < spec::kPage || e.offset > size_ || e.length > size_ - e.offset)
      fail(kind_name(e.kind) + " section lies outside the file");
    bool bulk = e.kind == spec::kColumn || e.kind == spec::kFineCodes;
    if (!bulk) {
      index_read += e.length;  // sections do not overlap: more than the file means a damaged table
      if (index_read > size_) fail("index sections add up to more than the file (overlapping sections)");
      section_bytes[ti] = read_at(e.offset, e.length);
    }
    if (spec::kCheckSums && !bulk && spec::checksum(section_bytes[ti].data(), e.length) != e.checksum)
      fail(kind_name(e.kind) + " section checksum mismatch" +
           (e.column != spec::kNoColumn ? " (column " + std::to_string(e.column) + ")" : ""));
    if (e.kind == spec::kSchema) {
      if (schema) fail("schema section appears twice");
      schema = &e;
    }
    if (e.kind == spec::kNodes) {
      if (nodes) fail("nodes section appears twice");
      nodes = &e;
    }
  }
  if (!schema) fail("schema section is missing");
  if (!nodes) fail("nodes section is missing");

  auto bytes_of = [&](const spec::SectionEntry* e) {
    return reinterpret_cast<const unsigned char*>(section_bytes[size_t(e - table.data())].data());
  };

  // Schema.
  std::vector<ColumnSpec> specs;
  std::string problem = spec::decode_schema(bytes_of(schema), bytes_of(schema) + schema->length, h.column_count, specs);
  if (!problem.empty()) fail(problem);
  columns_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    columns_[i].fine = specs[i].fine;
    columns_[i].spec = std::move(specs[i]);
  }

  // Tree.
  if (nodes->length != uint64_t(h.node_count) * sizeof(TreeNode) || h.node_count == 0)
    fail("nodes section has " + std::to_string(nodes->length) + " bytes for " + std::to_string(h.node_count) + " nodes");
  nodes_.resize(h.node_count);
  std::memcpy(nodes_.data(), bytes_of(nodes), nodes->length);
  try {
    levels_ = compute_levels(nodes_, lod_count_, count_);
  } catch (const FormatError& e) {
    fail(e.what());
  }
  if (levels_.level_count() != h.level_count) fail("level count does not match the node tree");
  for (const TreeNode& tn : nodes_)
    if (tn.is_leaf() && tn.own_count > leaf_size_) fail("a leaf holds more points than the leaf size");

  // Per-column sections.
  const uint64_t nn = nodes_.size();
  stats_.file_bytes = size_;
  uint64_t accounted = spec::kHeaderBytes + table_bytes;
  std::set<std::pair<uint32_t, uint32_t>> seen_sections;
  for (size_t ti = 0; ti < table.size(); ++ti) {
    const spec::SectionEntry& e = table[ti];
    accounted += e.length;
    if (e.kind == spec::kSchema || e.kind == spec::kNodes) continue;
    if (e.kind == spec::kBlockSums) continue;  // handled with its bulk section
    if (e.kind < spec::kColumn || e.kind > spec::kFineCodes) continue;  // unknown kinds: ignored (minor versions)
    if (e.column >= columns_.size()) fail(kind_name(e.kind) + " section names column " + std::to_string(e.column));
    ColumnIndex& c = columns_[e.column];
    size_t sz = dtype_size(c.spec.dtype);
    if (!seen_sections.insert({e.kind, e.column}).second)
      fail(kind_name(e.kind) + " section of column '" + c.spec.name + "' appears twice");
    const unsigned char* s = bytes_of(&e);  // an index section (bulk sections are mapped later)
    const std::string col = " of column '" + c.spec.name + "'";
    switch (e.kind) {
      case spec::kColumn:
      case spec::kFineCodes: {
        bool codes = e.kind == spec::kFineCodes;
        uint64_t want = codes ? count_ : count_ * sz;
        if (e.length != want) fail(kind_name(e.kind) + col + " has " + std::to_string(e.length) + " bytes, expected " + std::to_string(want));
        if (e.offset % spec::kPage) fail(kind_name(e.kind) + col + " is not page aligned");
        (codes ? stats_.fine_bytes : stats_.data_bytes) += e.length;
        Bulk b{kind_name(e.kind) + col, e.offset, e.length, codes ? block_bytes_ / sz : block_bytes_, {}};
        const spec::SectionEntry* sums = nullptr;
        for (const spec::SectionEntry& t : table)
          if (t.kind == spec::kBlockSums && t.column == ti) {
            if (sums) fail("block checksums" + col + " appear twice");
            sums = &t;
          }
        if (!sums) fail("block checksums" + col + " are missing");
        uint64_t blocks = (e.length + b.block_bytes - 1) / b.block_bytes;
        if (sums->length != blocks * 8) fail("block checksums" + col + " have the wrong length");
        b.sums.resize(blocks);
        if (sums->length) std::memcpy(b.sums.data(), bytes_of(sums), sums->length);
        bulk_.push_back(std::move(b));
        // The offset for now: open() turns it into an address once the file is mapped.
        const unsigned char* at = reinterpret_cast<const unsigned char*>(uintptr_t(e.offset));
        if (codes) c.codes = at; else c.data = at;
        break;
      }
      case spec::kNodeRanges: {
        if (e.length != 2 * nn * sz) fail("node ranges" + col + " have the wrong length");
        c.node_min.resize(nn);
        c.node_max.resize(nn);
        dispatch_dtype(c.spec.dtype, [&](auto v) {
          using T = decltype(v);
          for (uint64_t i = 0; i < nn; ++i) {
            c.node_min[i] = lower_double(load<T>(s + i * sz));
            c.node_max[i] = upper_double(load<T>(s + (nn + i) * sz));
          }
        });
        stats_.index_bytes += e.length;
        break;
      }
      case spec::kBitmaps: {
        spec::BitmapsHeader bh;
        if (e.length < sizeof bh) fail("bitmaps" + col + " are truncated");
        std::memcpy(&bh, s, sizeof bh);
        if (bh.id_width != 1 && bh.id_width != 2 && bh.id_width != 4) fail("bitmaps" + col + " have id width " + std::to_string(bh.id_width));
        if (e.length != sizeof bh + uint64_t(bh.dictionary_size) * 4 + nn * bh.id_width)
          fail("bitmaps" + col + " have the wrong length");
        c.global_min = bh.global_min;
        c.global_max = bh.global_max;
        c.nan_count = bh.nan_count;
        c.dictionary_size = bh.dictionary_size;
        c.id_width = bh.id_width;
        const unsigned char* dict = s + sizeof bh;
        const unsigned char* ids = dict + uint64_t(bh.dictionary_size) * 4;
        c.node_bits.resize(nn);
        for (uint64_t i = 0; i < nn; ++i) {
          uint32_t id = 0;
          std::memcpy(&id, ids + i * bh.id_width, bh.id_width);
          if (id >= bh.dictionary_size) fail("bitmaps" + col + " reference a missing dictionary entry");
          c.node_bits[i] = load<uint32_t>(dict + uint64_t(id) * 4);
        }
        stats_.index_bytes += e.length;
        break;
      }
      case spec::kFineEdges: {
        if (e.length != (spec::kFineBins + 1) * 8) fail("quantile edges" + col + " have the wrong length");
        c.edges.resize(spec::kFineBins + 1);
        std::memcpy(c.edges.data(), s, e.length);
        for (uint32_t k = 1; k <= spec::kFineBins; ++k)
          if (!(c.edges[k] >= c.edges[k - 1])) fail("quantile edges" + col + " are not sorted");
        stats_.fine_bytes += e.length;
        break;
      }
    }
  }
  for (ColumnIndex& c : columns_) {
    const std::string col = " of column '" + c.spec.name + "'";
    if (!c.data && count_ > 0) fail("data" + col + " is missing");
    if (c.node_min.empty()) fail("node ranges" + col + " are missing");
    if (c.node_bits.empty()) fail("bitmaps" + col + " are missing");
    if (c.fine == FineIndex::quantile && (c.edges.empty() || (!c.codes && count_ > 0)))
      fail("quantile index" + col + " is incomplete");
    if (c.fine != FineIndex::quantile) c.codes = nullptr, c.edges.clear();
  }
  stats_.index_bytes += nodes->length + schema->length + spec::kHeaderBytes + table_bytes;
  for (const spec::SectionEntry& e : table)
    if (e.kind == spec::kBlockSums) stats_.index_bytes += e.length;
  stats_.padding_bytes = size_ > accounted ? size_ - accounted : 0;
}

void ParticleFile::verify_data(const std::function<void(uint64_t, uint64_t)>& progress) const {
  uint64_t total = 0, done = 0;
  for (const Bulk& b : bulk_) total += b.sums.size();
  for (const Bulk& b : bulk_) {
    for (uint64_t k = 0; k < b.sums.size(); ++k) {
      uint64_t off = k * b.block_bytes;
      uint64_t len = std::min<uint64_t>(b.block_bytes, b.length - off);
      if (spec::kCheckSums && spec::checksum(map_ + b.offset + off, len) != b.sums[k])
        fail("checksum mismatch in " + b.what + ", block " + std::to_string(k) + " (bytes " +
             std::to_string(b.offset + off) + ".." + std::to_string(b.offset + off + len) + ")");
      if (progress) progress(++done, total);
    }
  }
}

}  // namespace motes
