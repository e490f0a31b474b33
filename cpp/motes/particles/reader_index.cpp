// A particle file's indexes: the id and tail indexes, opened with the file; the per-column
// indexes (node ranges, bitmaps, quantile edges), decoded on first use; and the whole-file
// check that `verify` runs.
#include <cmath>
#include <cstring>
#include <set>

#include "motes/container/container.hpp"
#include "motes/core/text.hpp"
#include "motes/particles/derived_check.hpp"
#include "motes/particles/kept.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/spec.hpp"
#include "motes/particles/tail_cover.hpp"

namespace motes {

namespace {

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

}  // namespace

std::vector<StoredBlock> ParticleFile::index_blocks(int bulk, uint64_t entries, const std::string& what) const {
  const uint64_t blocks = (entries + spec::kIdBlockValues - 1) / spec::kIdBlockValues;
  return block_table(size_t(bulk), blocks, what, "block table of the " + what);
}

void ParticleFile::open_id_index(int keys, int rows, int fences) {
  if (keys < 0 || rows < 0 || fences < 0) fail("the id index lacks its keys, rows or fences section");
  const TableEntry& k = table_[size_t(keys)];
  const TableEntry& r = table_[size_t(rows)];
  const TableEntry& f = table_[size_t(fences)];
  if (k.column >= schema_.size() || r.column != k.column || f.column != k.column || !id_dtype(schema_[k.column].dtype))
    fail("the id index names column " + std::to_string(k.column) + ", not an integer id column");
  if (k.storage != container::kBlocks || r.storage != container::kBlocks) fail("the id index is not stored as coded blocks");
  const uint64_t blocks = (count_ + spec::kIdBlockValues - 1) / spec::kIdBlockValues;
  auto key_blocks = index_blocks(keys, count_, "id index keys");
  auto row_blocks = index_blocks(rows, count_, "id index rows");
  const std::string fb = section(size_t(fences), blocks * 16);
  id_index_ = std::make_unique<IdIndex>(source_, source_->name(), k.column, count_, std::move(key_blocks), std::move(row_blocks), fb);
  id_index_->set_cache_keys(cache_key_, uint64_t(keys), uint64_t(rows));
}

std::string ParticleFile::tail_owner(uint32_t i) const {
  return i < schema_.size() ? " of column '" + schema_[i].name + "'"
                            : " of derived quantity '" + derived_[i - schema_.size()].name + "'";
}

void ParticleFile::open_derived(const Directory& d) {
  const uint32_t ncol = uint32_t(schema_.size());
  std::set<std::string> names;
  for (const ColumnSpec& c : schema_) names.insert(c.name);
  for (const auto& [q, at] : d.derived) {
    if (q != derived_.size()) fail("derived quantity " + std::to_string(derived_.size()) + " is missing");
    std::string problem;
    DerivedQuantity dq = decode_derived(section(size_t(at), spec::kDerivedHead + 255 + (1u << 16)), count_, problem);
    if (!problem.empty()) fail("derived quantity section " + std::to_string(q) + " " + problem);
    if (!names.insert(dq.name).second) fail("derived quantity '" + printable(dq.name) + "' has the name of a column or of another one");
    derived_.push_back(std::move(dq));
  }
  for (const auto& [i, at] : d.tails)
    if (i >= ncol + derived_.size()) fail("a derived tail names derived quantity " + std::to_string(i - ncol) + ", which the file does not define");
  for (const auto& [i, at] : d.covers)
    if (i >= ncol + derived_.size()) fail("a derived tail cover names derived quantity " + std::to_string(i - ncol) + ", which the file does not define");
}

void ParticleFile::open_tail_index(uint32_t column, int values, int rows, int bounds) {
  const std::string col = tail_owner(column);
  if (values < 0 || rows < 0 || bounds < 0) fail("the tail index" + col + " lacks its values, rows or bounds section");
  if (table_[size_t(values)].storage != container::kBlocks || table_[size_t(rows)].storage != container::kBlocks)
    fail("the tail index" + col + " is not stored as coded blocks");
  // The bounds section first: it gives the entry count the block tables are checked against.
  const std::string b = section(size_t(bounds), spec::kTailBoundsHead + (count_ / spec::kIdBlockValues + 1) * 16);
  uint64_t counts[2] = {0, 0};
  if (b.size() >= 16) std::memcpy(counts, b.data(), 16);
  if (counts[0] > count_ || counts[1] > count_ - counts[0]) fail("the tail index" + col + " counts more entries than particles");
  const uint64_t entries = counts[0] + counts[1];
  auto value_blocks = index_blocks(values, entries, "tail index values" + col);
  auto row_blocks = index_blocks(rows, entries, "tail index rows" + col);
  const DType dtype = column < schema_.size() ? schema_[column].dtype : DType::f64;  // derived quantities: float64
  tails_[column] = std::make_unique<TailIndex>(source_, source_->name(), column, dtype, count_,
                                               std::move(value_blocks), std::move(row_blocks), b);
  tails_[column]->set_cache_keys(cache_key_, uint64_t(values), uint64_t(rows));
}

void ParticleFile::open_tail_covers(const Directory& d) {
  std::vector<bool> listed(table_.size(), false);
  for (const auto& [column, at] : d.covers) {
    const std::string col = tail_owner(column);
    const bool of_derived = column >= schema_.size();
    const uint32_t kind = of_derived ? spec::kDerivedTailCoverValues : spec::kTailCoverValues;
    TailIndex* tail = tails_[column].get();
    if (!tail) fail("the tail cover" + col + " has no tail index");
    std::string problem;
    const TailCoverHead head = decode_tail_cover(section(size_t(at), spec::kTailCoverHead + 4 * uint64_t(schema_.size())), problem);
    if (!problem.empty()) fail("the tail cover" + col + " " + problem);
    if (head.low > tail->low_count() || head.high > tail->high_count())
      fail("the tail cover" + col + " covers more entries than its tail holds");
    std::vector<std::pair<uint32_t, BlockStream>> streams;
    for (uint32_t k : head.sections) {
      if (k >= table_.size() || table_[k].kind != kind)
        fail("the tail cover" + col + " lists section " + std::to_string(k) + ", not a " + spec::section_kind_name(kind) + " section");
      if (listed[k]) fail("the tail cover" + col + " lists section " + std::to_string(k) + " twice, or another cover does");
      listed[k] = true;
      const TableEntry& e = table_[k];
      if (e.storage != container::kBlocks) fail("the tail cover" + col + " is not stored as coded blocks");
      if (e.column == column) fail("the tail cover" + col + " covers its own column");
      for (const auto& [c, s] : streams)
        if (c == e.column) fail("the tail cover" + col + " covers column " + std::to_string(c) + " twice");
      const std::string what = "tail cover" + col + " of column '" + schema_[e.column].name + "'";
      BlockStream s = BlockStream::coded(source_, what, uint8_t(schema_[e.column].dtype), head.low + head.high,
                                         spec::kIdBlockValues, index_blocks(int(k), head.low + head.high, what));
      s.set_cache_key(cache_key_, k);
      streams.emplace_back(e.column, std::move(s));
    }
    tail->set_cover(head.low, head.high, std::move(streams));
  }
  for (const std::vector<size_t>* values : {&d.cover_values, &d.derived_cover_values})
    for (size_t k : *values)
      if (!listed[k]) fail(spec::section_kind_name(table_[k].kind) + " section " + std::to_string(k) + " belongs to no tail cover");
}

const ColumnIndex& ParticleFile::index(size_t i) const {
  if (i >= schema_.size()) throw UsageError("column index out of range");
  ColumnIndexSlot& lz = index_slots_[i];
  std::call_once(lz.once, [&] {
    // Kept across opens of the same contents (particles/kept.hpp).
    if ((lz.index = kept_as<ColumnIndex>(cache_key_, i))) return;
    auto c = std::make_shared<ColumnIndex>();
    decode_index(i, *c);
    const uint64_t bytes = (c->node_min.size() + c->node_max.size() + c->edges.size()) * 8 + c->node_bits.size() * 4 + 256;
    kept_put(cache_key_, i, c, bytes);
    lz.index = std::move(c);
  });
  return *lz.index;
}

void ParticleFile::decode_index(size_t i, ColumnIndex& c) const {
  c.spec = schema_[i];
  c.index = c.spec.index;
  const ColumnIndexSlot& lz = index_slots_[i];
  const size_t sz = dtype_size(c.spec.dtype);
  const uint64_t nn = node_count_;
  const std::string col = " of column '" + c.spec.name + "'";
  {
    const std::string s = section(size_t(lz.ranges), 2 * nn * sz);
    if (s.size() != 2 * nn * sz) fail("node ranges" + col + " have the wrong length");
    const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
    c.node_min.resize(nn);
    c.node_max.resize(nn);
    dispatch_dtype(c.spec.dtype, [&](auto v) {
      using T = decltype(v);
      for (uint64_t k = 0; k < nn; ++k) {
        c.node_min[k] = lower_double(load<T>(p + k * sz));
        c.node_max[k] = upper_double(load<T>(p + (nn + k) * sz));
      }
    });
  }
  {
    const std::string s = section(size_t(lz.bitmaps), sizeof(spec::BitmapsHeader) + 4 * (nn + 1) + 4 * nn);
    spec::BitmapsHeader bh;
    if (s.size() < sizeof bh) fail("bitmaps" + col + " are truncated");
    std::memcpy(&bh, s.data(), sizeof bh);
    if (bh.id_width != 1 && bh.id_width != 2 && bh.id_width != 4) fail("bitmaps" + col + " have id width " + std::to_string(bh.id_width));
    if (s.size() != sizeof bh + uint64_t(bh.dictionary_size) * 4 + nn * bh.id_width) fail("bitmaps" + col + " have the wrong length");
    c.global_min = bh.global_min;
    c.global_max = bh.global_max;
    c.nan_count = bh.nan_count;
    c.dictionary_size = bh.dictionary_size;
    c.id_width = bh.id_width;
    const unsigned char* dict = reinterpret_cast<const unsigned char*>(s.data()) + sizeof bh;
    const unsigned char* ids = dict + uint64_t(bh.dictionary_size) * 4;
    c.node_bits.resize(nn);
    // One loop per id width: a load of the id's own size (a copy of a run-time width into a
    // wider word stalled every node on its store), ids checked once after the loop.
    uint32_t top = 0;
    auto fill = [&](auto w) {
      using W = decltype(w);
      for (uint64_t k = 0; k < nn; ++k) {
        const uint32_t id = load<W>(ids + k * sizeof(W));
        top = std::max(top, id);
        c.node_bits[k] = load<uint32_t>(dict + uint64_t(std::min(id, bh.dictionary_size - 1)) * 4);
      }
    };
    if (nn && !bh.dictionary_size) fail("bitmaps" + col + " reference a missing dictionary entry");
    if (bh.id_width == 1) fill(uint8_t{});
    else if (bh.id_width == 2) fill(uint16_t{});
    else fill(uint32_t{});
    if (nn && top >= bh.dictionary_size) fail("bitmaps" + col + " reference a missing dictionary entry");
  }
  if (c.index == IndexKind::quantile) {
    const std::string s = section(size_t(lz.edges), (spec::kQuantileBins + 1) * 8);
    if (s.size() != (spec::kQuantileBins + 1) * 8) fail("quantile edges" + col + " have the wrong length");
    c.edges.resize(spec::kQuantileBins + 1);
    std::memcpy(c.edges.data(), s.data(), s.size());
    for (uint32_t k = 1; k <= spec::kQuantileBins; ++k)
      if (!(c.edges[k] >= c.edges[k - 1])) fail("quantile edges" + col + " are not sorted");
  }
}

void ParticleFile::verify_data(const std::function<void(uint64_t, uint64_t)>& progress) const {
  // The tree and every column index are decoded and checked here again, whatever an earlier
  // open of the same contents left kept (particles/kept.hpp): verify reads every byte it checks.
  decode_tree();
  for (size_t i = 0; i < schema_.size(); ++i) {
    ColumnIndex c;
    decode_index(i, c);
  }
  std::vector<const BlockStream*> streams;
  uint64_t total = 0, done = 0;
  for (const Streams& s : streams_) {
    streams.push_back(&s.values);
    if (s.has_codes) streams.push_back(&s.codes);
  }
  for (const BlockStream* s : streams) total += s->block_count();
  if (id_index_) id_index_->verify();
  for (size_t i = 0; i < schema_.size(); ++i)  // derived quantities' tails: verify_derived_tail
    if (tails_[i]) tails_[i]->verify(streams_[i].values), tails_[i]->verify_cover([&](uint32_t c) -> const BlockStream& { return streams_[c].values; });
  for (const BlockStream* s : streams)
    for (uint64_t b = 0; b < s->block_count(); ++b) {
      s->verify_block(b);
      if (progress) progress(++done, total);
    }
  verify_derived(*this);  // computed again from the columns just checked
}

void ParticleFile::verify_derived_tail(size_t d, const BlockStream& values) const {
  const TailIndex* t = tail_index(schema_.size() + d);
  if (!t) return;
  t->verify(values);
  t->verify_cover([&](uint32_t c) -> const BlockStream& { return streams_[c].values; });
}

std::vector<ParticleFile::SectionSize> ParticleFile::section_sizes() const {
  auto role_of = [](uint32_t kind) -> const char* {
    switch (kind) {
      case spec::kColumn: return "values";
      case spec::kQuantileEdges:
      case spec::kQuantileCodes: return "quantile index";
      case spec::kNodeRanges: return "node ranges";
      case spec::kBitmaps: return "bitmaps";
      case spec::kIdKeys:
      case spec::kIdRows:
      case spec::kIdFences: return "id index";
      case spec::kTailValues:
      case spec::kTailRows:
      case spec::kTailBounds: return "tail index";
      case spec::kTailCoverValues:
      case spec::kTailCover: return "tail covers";
      case spec::kDerived:
      case spec::kDerivedTailValues:
      case spec::kDerivedTailRows:
      case spec::kDerivedTailBounds:
      case spec::kDerivedTailCoverValues:
      case spec::kDerivedTailCover: return "derived quantities";
      case spec::kNodes: return "tree";
      case spec::kSchema: return "schema";
      default: return "other";
    }
  };
  auto column_of = [&](const TableEntry& e) -> std::string {
    const bool per_column = e.kind == spec::kColumn || e.kind == spec::kQuantileEdges || e.kind == spec::kQuantileCodes ||
                            e.kind == spec::kNodeRanges || e.kind == spec::kBitmaps || e.kind == spec::kTailValues ||
                            e.kind == spec::kTailRows || e.kind == spec::kTailBounds || e.kind == spec::kIdKeys ||
                            e.kind == spec::kIdRows || e.kind == spec::kIdFences;
    return per_column && e.column < schema_.size() ? schema_[e.column].name : std::string();
  };
  // A coded section's (storage 2) length is the extent of its blocks, which interleave with
  // other columns' window by window: its bytes are its blocks', which its block table gives
  // (24-byte entries: offset u64, stored u32, zero u32, checksum u64).
  std::vector<uint64_t> stored(table_.size());
  for (size_t i = 0; i < table_.size(); ++i) stored[i] = table_[i].length;
  for (size_t j = 0; j < table_.size(); ++j) {
    const TableEntry& t = table_[j];
    if (t.kind != spec::kBlockTable || t.column >= table_.size() || table_[t.column].storage != 2) continue;
    const std::string b = section(j);
    uint64_t sum = 0;
    for (size_t at = 0; at + 24 <= b.size(); at += 24) {
      uint32_t s;
      std::memcpy(&s, b.data() + at + 8, 4);
      sum += s;
    }
    stored[t.column] = sum;
  }
  std::vector<SectionSize> out;
  uint64_t listed = 0;
  for (size_t i = 0; i < table_.size(); ++i) {
    const TableEntry& e = table_[i];
    // Block tables and checksums name the section they describe by its index in the table.
    const bool companion = e.kind == spec::kBlockSums || e.kind == spec::kBlockTable;
    const TableEntry& owner = companion && e.column < table_.size() ? table_[e.column] : e;
    const std::string kind = spec::section_kind_name(e.kind) + (companion ? " of " + spec::section_kind_name(owner.kind) : "");
    out.push_back({role_of(owner.kind), column_of(owner), kind, stored[i]});
    listed += stored[i];
  }
  const uint64_t size = source_->size();
  out.push_back({"header and padding", "", "header, section table and padding", size > listed ? size - listed : 0});
  return out;
}

}  // namespace motes
