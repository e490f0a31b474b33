#include "motes/parallel/wire.hpp"

#include <bit>
#include <map>

#include "motes/particles/spec.hpp"

namespace motes::wire {

namespace {

// Message tags: one byte naming what a buffer holds.
enum Tag : uint8_t {
  kFailure = 'F',
  kStep = 'S',
  kSchema = 'C',
  kReadRequest = 'R',
  kRankSummary = 'M',
  kRankPlan = 'P',
  kPartReports = 'W',
  kCount = 'N',
};
constexpr size_t kHead = 1 + 4, kTail = 8;

class Out {
 public:
  explicit Out(Tag tag) : b_(kHead, '\0') { b_[0] = char(tag); }
  void u8(uint8_t v) { b_.push_back(char(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b_.push_back(char(uint8_t(v >> (8 * i))));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b_.push_back(char(uint8_t(v >> (8 * i))));
  }
  void i64(int64_t v) { u64(uint64_t(v)); }
  void f64(double v) { u64(std::bit_cast<uint64_t>(v)); }
  void str(std::string_view s) {
    u32(length(s.size()));
    b_.append(s);
  }
  void box(const Box& b) {
    for (int a = 0; a < 3; ++a) f64(b.lo[a]);
    for (int a = 0; a < 3; ++a) f64(b.hi[a]);
  }
  // A count of items that follow.
  void count(size_t n) { u32(length(n)); }
  std::string finish() {
    uint64_t payload = b_.size() - kHead;
    if (payload > UINT32_MAX) throw InternalError("wire: a message of " + std::to_string(payload) + " bytes is too long");
    for (int i = 0; i < 4; ++i) b_[size_t(1 + i)] = char(uint8_t(payload >> (8 * i)));
    u64(spec::checksum(b_.data(), b_.size()));
    return std::move(b_);
  }

 private:
  static uint32_t length(size_t n) {
    if (n > UINT32_MAX) throw InternalError("wire: " + std::to_string(n) + " items are too many for one message");
    return uint32_t(n);
  }
  std::string b_;
};

class In {
 public:
  // Checks the frame: tag, length and checksum.
  In(std::string_view bytes, Tag tag, const char* name) : b_(bytes), name_(name) {
    if (b_.size() < kHead + kTail)
      fail("truncated (" + std::to_string(b_.size()) + " bytes, a message has at least " +
           std::to_string(kHead + kTail) + ")");
    if (uint8_t(b_[0]) != tag)
      throw InternalError(std::string("wire: expected a ") + name_ + " message, got one tagged " +
                          std::to_string(uint8_t(b_[0])));
    at_ = 1;
    uint64_t payload = u32();
    const uint64_t expected = kHead + payload + kTail;
    if (b_.size() < expected)
      fail("truncated (" + std::to_string(b_.size()) + " of " + std::to_string(expected) + " bytes)");
    if (b_.size() > expected)
      fail("corrupt (" + std::to_string(b_.size()) + " bytes, its header says " + std::to_string(expected) + ")");
    end_ = kHead + size_t(payload);
    uint64_t sum = 0;
    for (int i = 0; i < 8; ++i) sum |= uint64_t(uint8_t(b_[end_ + size_t(i)])) << (8 * i);
    if (sum != spec::checksum(b_.data(), end_)) fail("corrupt (checksum mismatch)");
  }
  uint8_t u8() {
    need(1);
    return uint8_t(b_[at_++]);
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(b_[at_++])) << (8 * i);
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(b_[at_++])) << (8 * i);
    return v;
  }
  int64_t i64() { return int64_t(u64()); }
  double f64() { return std::bit_cast<double>(u64()); }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string s(b_.substr(at_, n));
    at_ += n;
    return s;
  }
  Box box() {
    Box b;
    for (int a = 0; a < 3; ++a) b.lo[a] = f64();
    for (int a = 0; a < 3; ++a) b.hi[a] = f64();
    return b;
  }
  // A count of items that follow, each at least min_bytes long: checked against the
  // bytes left before anything is allocated for them.
  size_t count(size_t min_bytes) {
    uint32_t n = u32();
    if (uint64_t(n) * min_bytes > end_ - at_)
      fail("corrupt (" + std::to_string(n) + " items cannot fit in the " + std::to_string(end_ - at_) +
           " bytes left)");
    return n;
  }
  DType dtype() {
    uint8_t code = u8();
    if (!dtype_valid(code)) fail("corrupt (dtype code " + std::to_string(code) + ")");
    return DType(code);
  }
  // Nothing may be left over.
  void done() {
    if (at_ != end_) fail("corrupt (" + std::to_string(end_ - at_) + " bytes left over)");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw InternalError(std::string("wire: ") + name_ + " message " + why);
  }

 private:
  void need(uint64_t n) {
    if (n > end_ - at_) fail("truncated (" + std::to_string(n) + " more bytes needed at byte " + std::to_string(at_) + ")");
  }
  std::string_view b_;
  const char* name_;
  size_t at_ = 0, end_ = kHead;
};

}  // namespace

std::string encode(const ErrorReport& f) {
  Out o(kFailure);
  o.u32(uint32_t(f.kind));
  o.i64(f.error_number);
  o.str(f.message);
  return o.finish();
}

ErrorReport decode_failure(std::string_view bytes) {
  In in(bytes, kFailure, "failure");
  ErrorReport f;
  uint32_t kind = in.u32();
  if (!find_error_kind(int(kind))) in.fail("corrupt (error kind " + std::to_string(kind) + ")");
  f.kind = ErrorKind(kind);
  f.error_number = int(in.i64());
  f.message = in.str();
  in.done();
  return f;
}

std::string encode(const Step& s) {
  Out o(kStep);
  o.i64(s.index);
  o.f64(s.time);
  o.str(s.attributes);
  return o.finish();
}

Step decode_step(std::string_view bytes) {
  In in(bytes, kStep, "step");
  Step s;
  s.index = in.i64();
  s.time = in.f64();
  s.attributes = in.str();
  in.done();
  return s;
}

std::string encode(const Schema& s) {
  Out o(kSchema);
  o.count(s.size());
  for (const SpeciesSchema& sp : s) {
    o.str(sp.name);
    o.count(sp.columns.size());
    for (const SchemaColumn& c : sp.columns) {
      o.str(c.name);
      o.u8(uint8_t(c.dtype));
    }
  }
  return o.finish();
}

Schema decode_schema(std::string_view bytes) {
  In in(bytes, kSchema, "schema");
  Schema s(in.count(8));
  for (SpeciesSchema& sp : s) {
    sp.name = in.str();
    sp.columns.resize(in.count(5));
    for (SchemaColumn& c : sp.columns) {
      c.name = in.str();
      c.dtype = in.dtype();
    }
  }
  in.done();
  return s;
}

std::string schema_difference(const Schema& reference, const Schema& other) {
  using Columns = std::map<std::string, std::string>;  // name -> dtype
  auto by_name = [](const Schema& s) {
    std::map<std::string, Columns> out;
    for (const SpeciesSchema& sp : s) {
      Columns& cols = out[sp.name];
      for (const SchemaColumn& c : sp.columns) cols[c.name] = dtype_name(c.dtype);
    }
    return out;
  };
  auto a = by_name(reference), b = by_name(other);
  std::vector<std::string> notes;
  for (const auto& [sp, cols] : a) {
    auto it = b.find(sp);
    if (it == b.end()) {
      notes.push_back("species '" + sp + "' is missing");
      continue;
    }
    for (const auto& [col, t] : cols) {
      auto jt = it->second.find(col);
      if (jt == it->second.end()) notes.push_back("column '" + sp + "." + col + "' is missing");
      else if (jt->second != t) notes.push_back("column '" + sp + "." + col + "' is " + jt->second + " (rank 0: " + t + ")");
    }
    for (const auto& [col, t] : it->second)
      if (!cols.count(col)) notes.push_back("column '" + sp + "." + col + "' (" + t + ") is extra");
  }
  for (const auto& [sp, cols] : b)
    if (!a.count(sp)) notes.push_back("species '" + sp + "' is extra");
  if (notes.empty()) notes.push_back("columns are in a different order");
  std::string s;
  for (size_t i = 0; i < notes.size(); ++i) s += (i ? ", " : "") + notes[i];
  return s;
}

std::string encode(const ReadRequest& r) {
  Out o(kReadRequest);
  o.str(r.path);
  o.str(r.where);
  o.f64(r.quality);
  o.u8(r.fraction.has_value());
  o.f64(r.fraction.value_or(0));
  o.count(r.columns.size());
  for (const std::string& c : r.columns) o.str(c);
  return o.finish();
}

ReadRequest decode_read_request(std::string_view bytes) {
  In in(bytes, kReadRequest, "read request");
  ReadRequest r;
  r.path = in.str();
  r.where = in.str();
  r.quality = in.f64();
  uint8_t has_fraction = in.u8();
  if (has_fraction > 1) in.fail("corrupt (fraction flag " + std::to_string(has_fraction) + ")");
  double fraction = in.f64();
  if (has_fraction) r.fraction = fraction;
  r.columns.resize(in.count(4));
  for (std::string& c : r.columns) c = in.str();
  in.done();
  return r;
}

std::string encode(const RankSummary& s) {
  Out o(kRankSummary);
  o.u64(s.count);
  o.u32(s.node);
  o.box(s.bounds);
  o.count(s.cells.size());
  for (const RankCell& c : s.cells) {
    o.box(c.box);
    o.u64(c.count);
  }
  return o.finish();
}

RankSummary decode_rank_summary(std::string_view bytes) {
  In in(bytes, kRankSummary, "rank summary");
  RankSummary s;
  s.count = in.u64();
  s.node = in.u32();
  s.bounds = in.box();
  s.cells.resize(in.count(56));
  for (RankCell& c : s.cells) {
    c.box = in.box();
    c.count = in.u64();
  }
  in.done();
  return s;
}

std::string encode(const RankPlan& p) {
  Out o(kRankPlan);
  o.count(p.part_of_cell.size());
  for (uint32_t part : p.part_of_cell) o.u32(part);
  o.count(p.incoming.size());
  for (const IncomingPart& in : p.incoming) {
    o.u32(in.part);
    o.count(in.from.size());
    for (const auto& [rank, count] : in.from) {
      o.u32(uint32_t(rank));
      o.u64(count);
    }
  }
  return o.finish();
}

RankPlan decode_rank_plan(std::string_view bytes) {
  In in(bytes, kRankPlan, "rank plan");
  RankPlan p;
  p.part_of_cell.resize(in.count(4));
  for (uint32_t& part : p.part_of_cell) part = in.u32();
  p.incoming.resize(in.count(8));
  for (IncomingPart& part : p.incoming) {
    part.part = in.u32();
    part.from.resize(in.count(12));
    for (auto& [rank, count] : part.from) {
      uint32_t r = in.u32();
      if (r > uint32_t(INT32_MAX)) in.fail("corrupt (rank " + std::to_string(r) + ")");
      rank = int(r);
      count = in.u64();
    }
  }
  in.done();
  return p;
}

std::string encode(const std::vector<PartReport>& parts) {
  Out o(kPartReports);
  o.count(parts.size());
  for (const PartReport& r : parts) {
    const PartSummary& s = r.summary;
    o.u32(r.part);
    o.u64(s.count);
    o.u64(s.file_bytes);
    o.u64(s.header_checksum);
    o.box(s.bounds);
    o.count(s.columns.size());
    for (const ColumnSummary& c : s.columns) {
      o.str(c.name);
      o.u8(uint8_t(c.dtype));
      o.u8(uint8_t(c.index));
      o.f64(c.min);
      o.f64(c.max);
      o.u64(c.nan_count);
      o.u32(c.root_bits);
    }
  }
  return o.finish();
}

std::vector<PartReport> decode_part_reports(std::string_view bytes) {
  In in(bytes, kPartReports, "part summaries");
  std::vector<PartReport> parts(in.count(80));
  for (PartReport& r : parts) {
    PartSummary& s = r.summary;
    r.part = in.u32();
    s.count = in.u64();
    s.file_bytes = in.u64();
    s.header_checksum = in.u64();
    s.bounds = in.box();
    s.columns.resize(in.count(34));
    for (ColumnSummary& c : s.columns) {
      c.name = in.str();
      c.dtype = in.dtype();
      uint8_t kind = in.u8();
      if (kind != uint8_t(IndexKind::none) && kind != uint8_t(IndexKind::quantile) &&
          kind != uint8_t(IndexKind::automatic))
        in.fail("corrupt (index kind " + std::to_string(kind) + ")");
      c.index = IndexKind(kind);
      c.min = in.f64();
      c.max = in.f64();
      c.nan_count = in.u64();
      c.root_bits = in.u32();
    }
  }
  in.done();
  return parts;
}

std::string encode_count(uint64_t count) {
  Out o(kCount);
  o.u64(count);
  return o.finish();
}

uint64_t decode_count(std::string_view bytes) {
  In in(bytes, kCount, "count");
  uint64_t n = in.u64();
  in.done();
  return n;
}

}  // namespace motes::wire
