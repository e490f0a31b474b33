#include "motes/container/block_stream.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <mutex>
#include <type_traits>

#include "motes/core/lru.hpp"
#include "motes/core/memory.hpp"
#include "motes/core/threads.hpp"
#include "motes/core/types.hpp"
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace motes {

namespace {

std::atomic<uint64_t> next_stream_id{1};  // below 2^63: keys set by set_cache_key have that bit
std::atomic<uint64_t> coded_blocks_decoded{0};

}  // namespace

BlockStream BlockStream::contiguous(std::shared_ptr<const ByteSource> source, std::string what, uint8_t dtype_code,
                                    uint64_t count, uint64_t per_block, uint64_t offset, std::vector<uint64_t> sums) {
  BlockStream s;
  s.source_ = std::move(source);
  s.what_ = std::move(what);
  s.dtype_code_ = dtype_code;
  s.type_ = codec::value_type(dtype_code);
  s.count_ = count;
  s.per_block_ = std::max<uint64_t>(per_block, 1);
  s.offset_ = offset;
  s.sums_ = std::move(sums);
  if (!s.sums_.empty()) {
    s.checked_ = std::shared_ptr<std::atomic<uint64_t>[]>(new std::atomic<uint64_t>[(s.sums_.size() + 63) / 64]());
    s.checked_count_ = std::make_shared<std::atomic<uint64_t>>(0);
  }
  s.id_ = next_stream_id.fetch_add(1);
  return s;
}

BlockStream BlockStream::coded(std::shared_ptr<const ByteSource> source, std::string what, uint8_t dtype_code,
                               uint64_t count, uint64_t per_block, std::vector<StoredBlock> blocks) {
  BlockStream s = contiguous(std::move(source), std::move(what), dtype_code, count, per_block, 0, {});
  s.coded_ = true;
  s.blocks_ = std::move(blocks);
  s.stored_checked_ = std::shared_ptr<std::atomic<uint64_t>[]>(new std::atomic<uint64_t>[(s.blocks_.size() + 63) / 64]());
  return s;
}

struct BlockStream::Computed {
  std::mutex m;
  std::shared_ptr<const DecodedBlock> values;
};

// The cache key of a derived stream's values (all of them, one entry): no block has it.
constexpr uint64_t kAllValues = ~uint64_t(0);

BlockStream BlockStream::derived(std::shared_ptr<const ByteSource> source, std::string what, uint8_t dtype_code,
                                 uint64_t count, uint64_t per_block, std::shared_ptr<const ComputedValues> from) {
  BlockStream s = contiguous(std::move(source), std::move(what), dtype_code, count, per_block, 0, {});
  s.coded_ = true;  // never in place
  s.derived_ = std::move(from);
  s.computed_ = std::make_shared<Computed>();
  return s;
}

std::shared_ptr<const DecodedBlock> BlockStream::all() const {
  std::lock_guard<std::mutex> lock(computed_->m);
  if (computed_->values) return computed_->values;
  std::shared_ptr<const DecodedBlock> v = block_cache().find(id_, kAllValues);
  if (!v) {
    auto fresh = std::make_shared<DecodedBlock>(std::max<uint64_t>(count_, 1) * type_.size);
    derived_->compute(fresh->data());
    block_cache().put(id_, kAllValues, fresh);
    v = std::move(fresh);
  }
  computed_->values = v;
  return v;
}

void BlockStream::set_cache_key(uint64_t file, uint64_t section) {
  if (!file) return;
  const uint64_t key[2] = {file, section};
  id_ = XXH3_64bits(key, sizeof key) | (uint64_t(1) << 63);  // per-open ids stay below 2^63
}

uint64_t content_cache_key(const ByteSource& source, uint64_t header_checksum) {
  const uint64_t file = source.file_identity();
  if (!file) return 0;
  const uint64_t key[3] = {file, header_checksum, source.size()};
  return XXH3_64bits(key, sizeof key) | 1;  // never 0
}

void BlockStream::set_quantile_context(const BlockStream* codes, std::shared_ptr<const std::vector<uint64_t>> bases,
                                       std::shared_ptr<const std::vector<double>> edges) {
  codes_ = codes;
  bases_ = std::move(bases);
  edges_ = std::move(edges);
}

uint64_t BlockStream::stored_bytes() const {
  if (derived_) return 0;
  if (!coded_) return count_ * type_.size;
  uint64_t n = 0;
  for (const StoredBlock& b : blocks_) n += b.stored;
  return n;
}

std::string BlockStream::pipelines() const {
  if (derived_) return derived_->source_name();
  if (!coded_) return "raw";
  std::vector<std::string> seen;
  std::string stored;
  for (uint64_t b = 0; b < blocks_.size(); ++b) {
    stored.resize(std::min<uint64_t>(blocks_[b].stored, codec::kBlockHeaderBytes + 8 * codec::kStreamEntryBytes + 16));
    source_->read(blocks_[b].offset, stored.size(), stored.data());
    codec::Plan p;
    std::string name = "damaged";
    if (codec::describe(stored.data(), stored.size(), p)) name = p.raw() ? "raw" : p.name(type_.size);
    bool known = false;
    for (const std::string& s : seen) known |= s == name;
    if (!known) seen.push_back(name);
    if (seen.size() >= 4) break;
  }
  std::string out;
  for (const std::string& s : seen) out += (out.empty() ? "" : " | ") + s;
  return out;
}

const unsigned char* BlockStream::in_place() const {
  if (coded_ || !source_) return nullptr;
  const unsigned char* base = source_->data();
  return base ? base + offset_ : nullptr;
}

const unsigned char* BlockStream::in_place(uint64_t start, uint64_t n) const {
  const unsigned char* p = in_place();
  if (!p) return nullptr;
  check(start, n);
  return p + start * type_.size;
}

void BlockStream::check_blocks(uint64_t first, uint64_t last) const {
  last = std::min(last, block_count() - 1);
  for (uint64_t b = first; b <= last; ++b) {
    if (checked_[b / 64].load(std::memory_order_acquire) >> (b % 64) & 1) continue;
    const uint64_t n = values_in(b) * type_.size, at = offset_ + b * per_block_ * type_.size;
    if (const unsigned char* p = source_->data()) {
      check_raw(b, p + at);
    } else {
      std::vector<unsigned char> bytes(n);
      source_->read(at, n, bytes.data());
      check_raw(b, bytes.data());
    }
  }
}

void BlockStream::check(std::vector<uint64_t> blocks, unsigned threads) const {
  if (all_checked()) return;
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  std::vector<uint64_t> todo;
  for (uint64_t b : blocks)
    if (b < block_count() && !(checked_[b / 64].load(std::memory_order_acquire) >> (b % 64) & 1)) todo.push_back(b);
  parallel_for(todo.size(), todo.size() < 4 ? 1 : threads, [&](uint64_t i) { check_blocks(todo[i], todo[i]); });
}

void BlockStream::check_raw(uint64_t b, const unsigned char* bytes) const {
  if (!checked_ || b >= sums_.size()) return;
  const uint64_t n = values_in(b) * type_.size, at = offset_ + b * per_block_ * type_.size;
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (XXH3_64bits(bytes, n) != sums_[b])
    fail(b, "checksum mismatch (bytes " + std::to_string(at) + ".." + std::to_string(at + n) + ")");
#endif
  const uint64_t bit = uint64_t(1) << (b % 64);
  if (!(checked_[b / 64].fetch_or(bit, std::memory_order_acq_rel) & bit)) checked_count_->fetch_add(1, std::memory_order_acq_rel);
}

void BlockStream::fail(uint64_t b, const std::string& problem) const {
  throw FormatError(source_->name() + ": " + what_ + ", block " + std::to_string(b) + ": " + problem);
}

std::shared_ptr<DecodedBlock> BlockStream::decode(uint64_t b) const {
  auto out = std::make_shared<DecodedBlock>(values_in(b) * type_.size);
  decode_into(b, out->data());
  return out;
}

void BlockStream::decode_into(uint64_t b, unsigned char* dst) const {
  const uint64_t n = values_in(b);
  if (derived_) {
    std::memcpy(dst, all()->data() + b * per_block_ * type_.size, n * type_.size);
    return;
  }
  if (!coded_) {
    source_->read(offset_ + b * per_block_ * type_.size, n * type_.size, dst);
    check_raw(b, dst);
    return;
  }
  // Stored bytes in place for memory, else read (pread: a truncated file is an error here).
  // decode_stored decodes the quantile codes first, through this buffer too: this block's
  // bytes are read after them.
  if (source_->in_memory()) return decode_stored(b, nullptr, dst);
  decode_stored(b, [&] {
    thread_local std::vector<unsigned char> buf;
    const StoredBlock& sb = blocks_[b];
    if (buf.size() < sb.stored) buf.resize(sb.stored);
    source_->read(sb.offset, sb.stored, buf.data());
    return static_cast<const unsigned char*>(buf.data());
  }, dst);
}

template <class Stored>
void BlockStream::decode_stored(uint64_t b, Stored stored_bytes, unsigned char* dst) const {
  const uint64_t n = values_in(b);
  coded_blocks_decoded.fetch_add(1, std::memory_order_relaxed);
  const StoredBlock& sb = blocks_[b];
  // The codes first: decoding them uses the same per-thread buffers as the lines below.
  codec::Context ctx;
  std::shared_ptr<const DecodedBlock> codes;
  if (codes_) {
    if (const unsigned char* p = codes_->in_place(b * per_block_, n)) {
      ctx.codes = p;
    } else {
      codes = codes_->block(b);
      ctx.codes = codes->data();
    }
    ctx.bases = bases_->data();
    ctx.edges = edges_ ? edges_->data() : nullptr;
  }
  const unsigned char* stored;
  if constexpr (std::is_same_v<Stored, std::nullptr_t>) stored = source_->data() + sb.offset;
  else if constexpr (std::is_pointer_v<Stored>) stored = stored_bytes;
  else stored = stored_bytes();
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (XXH3_64bits(stored, sb.stored) != sb.checksum) fail(b, "checksum mismatch (corrupted data)");
#endif
  std::string problem = codec::decode(type_, stored, sb.stored, dst, n, ctx);
  if (!problem.empty()) fail(b, problem);
}

bool BlockStream::addressable(uint64_t b, codec::AddressableBlock& view, std::vector<unsigned char>& buf) const {
  if (!coded_ || derived_ || b >= block_count()) return false;
  const StoredBlock& sb = blocks_[b];
  const unsigned char* base = source_->data();
  const unsigned char* stored = base ? base + sb.offset : nullptr;
  const uint64_t bit = uint64_t(1) << (b % 64);
  const bool checked = stored && (stored_checked_[b / 64].load(std::memory_order_acquire) & bit);
  if (!stored) {
    buf.resize(sb.stored);
    source_->read(sb.offset, sb.stored, buf.data());
    stored = buf.data();
  }
  if (sb.stored < 2 || !codec::addressable_layout(stored[1])) return false;  // a peek: decoded as usual
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (!checked && XXH3_64bits(stored, sb.stored) != sb.checksum) fail(b, "checksum mismatch (corrupted data)");
#endif
  std::string problem;
  if (!view.open(type_, stored, sb.stored, values_in(b), problem, checked)) {
    if (!problem.empty()) fail(b, problem);
    return false;
  }
  // Checked against its checksum and its unit table walked: in place, neither is done again.
  if (base && !checked) stored_checked_[b / 64].fetch_or(bit, std::memory_order_acq_rel);
  return !view.needs_codes() || codes_;
}

void BlockStream::gather(const uint64_t* pos, size_t k, void* out) const {
  unsigned char* dst = static_cast<unsigned char*>(out);
  const size_t size = type_.size;
  codec::AddressableBlock view;
  std::vector<unsigned char> buf;
  for (size_t i = 0; i < k;) {
    if (pos[i] >= count_) throw UsageError(what_ + ": position " + std::to_string(pos[i]) + " is out of range");
    const uint64_t b = pos[i] / per_block_, first = b * per_block_, end = first + values_in(b);
    size_t j = i;
    while (j < k && pos[j] < end) ++j;
    // The next block's header and unit table are asked for while this block's words are read.
    if (const unsigned char* base = source_->data(); coded_ && !derived_ && base && j < k && pos[j] < count_) {
      const StoredBlock& next = blocks_[pos[j] / per_block_];
      __builtin_prefetch(base + next.offset);
      __builtin_prefetch(base + next.offset + 64);
    }
    if (const unsigned char* p = in_place(first, end - first)) {
      for (size_t q = i; q < j; ++q) std::memcpy(dst + q * size, p + (pos[q] - first) * size, size);
    } else if (addressable(b, view, buf)) {
      // The block's quantile codes where its words need them: in place, or decoded (cached).
      const uint8_t* codes = nullptr;
      std::shared_ptr<const DecodedBlock> held;
      if (view.needs_codes()) {
        codes = codes_->in_place(first, end - first);
        if (!codes) held = codes_->block(b), codes = held->data();
      }
      const uint64_t* bases = bases_ ? bases_->data() : nullptr;
      // Scattered words miss the caches one by one: each is asked for kAhead words early.
      constexpr size_t kAhead = 8;
      for (size_t q = i; q < std::min(j, i + kAhead); ++q) view.prefetch(size_t(pos[q] - first), codes);
      for (size_t q = i; q < j; ++q) {
        if (q + kAhead < j) view.prefetch(size_t(pos[q + kAhead] - first), codes);
        if (!view.value(size_t(pos[q] - first), codes, bases, dst + q * size)) fail(b, "a packed word lies outside its block");
      }
    } else {
      const std::shared_ptr<const DecodedBlock> d = block(b);
      for (size_t q = i; q < j; ++q) std::memcpy(dst + q * size, d->data() + (pos[q] - first) * size, size);
    }
    i = j;
  }
}

std::shared_ptr<const DecodedBlock> BlockStream::block(uint64_t b) const {
  if (b >= block_count()) fail(b, "block out of range");
  if (derived_) return decode(b);  // a copy out of the values kept whole: not cached twice
  if (auto hit = block_cache().find(id_, b)) return hit;
  std::shared_ptr<const DecodedBlock> d = decode(b);
  block_cache().put(id_, b, d);
  return d;
}

void BlockStream::read(uint64_t start, uint64_t n, void* dst) const { read_span(start, n, dst, true); }

void BlockStream::read_span(uint64_t start, uint64_t n, void* dst, bool keep) const {
  if (start > count_ || n > count_ - start) throw UsageError(what_ + ": values out of range");
  unsigned char* out = static_cast<unsigned char*>(dst);
  const size_t size = type_.size;
  if (const unsigned char* p = in_place(start, n)) {
    std::memcpy(out, p, n * size);
    return;
  }
  if (derived_) {
    if (n) std::memcpy(out, all()->data() + start * size, n * size);
    return;
  }
  if (!n) return;
  // The blocks held decoded (one lookup each), and those to decode.
  const uint64_t b0 = start / per_block_, b1 = (start + n - 1) / per_block_;
  std::vector<std::shared_ptr<const DecodedBlock>> held(b1 - b0 + 1);
  std::vector<uint64_t> missing;
  for (uint64_t b = b0; b <= b1; ++b)
    if (!(held[b - b0] = block_cache().find(id_, b))) missing.push_back(b);
  if (n > per_block_ && !missing.empty()) {  // a bulk read: its blocks asked for at once
    std::vector<ByteRange> ranges;
    if (!coded_) ranges.push_back({offset_ + start * size, n * size});
    else for (uint64_t b : missing) ranges.push_back({blocks_[b].offset, blocks_[b].stored});
    if (codes_ && coded_) codes_->block_ranges(missing, ranges);
    source_->will_need(ranges);
  }
  // The stored bytes of missing coded blocks that lie back to back, read at once (up to
  // kRunBytes; one pread instead of one per block), into memory of this thread's own.
  constexpr uint64_t kRunBytes = uint64_t(1) << 20;
  thread_local std::vector<unsigned char> run;
  uint64_t run_first = 0, run_end = 0;  // blocks whose stored bytes `run` holds
  const bool pread_runs = coded_ && !source_->in_memory();
  for (size_t next = 0; n > 0;) {
    const uint64_t b = start / per_block_, first = b * per_block_;
    const uint64_t take = std::min(n, first + values_in(b) - start);
    const std::shared_ptr<const DecodedBlock>& hit = held[b - b0];
    // Block b decoded into `into`: its stored bytes from the run read with it.
    auto decode_block = [&](unsigned char* into) {
      if (!pread_runs) return decode_into(b, into);
      if (b < run_first || b >= run_end) {
        uint64_t end = b + 1, bytes = blocks_[b].stored;
        for (size_t k = next + 1; k < missing.size() && missing[k] == end &&
                                  blocks_[end].offset == blocks_[end - 1].offset + blocks_[end - 1].stored &&
                                  bytes + blocks_[end].stored <= kRunBytes;
             ++k, ++end)
          bytes += blocks_[end].stored;
        if (run.size() < bytes) run.resize(bytes);
        source_->read(blocks_[b].offset, bytes, run.data());
        run_first = b, run_end = end;
      }
      decode_stored(b, run.data() + (blocks_[b].offset - blocks_[run_first].offset), into);
    };
    if (!hit) next = size_t(std::find(missing.begin() + std::ptrdiff_t(next), missing.end(), b) - missing.begin());
    if (hit) {
      std::memcpy(out, hit->data() + (start - first) * size, take * size);
    } else if (take == values_in(b) && (!keep || !block_cache().has_room(take * size))) {
      // A whole block of a bulk read when the cache is full (or not to be kept): decoded
      // straight into place, so a scan larger than the cache does not evict what queries reuse.
      decode_block(out);
    } else {
      auto d = std::make_shared<DecodedBlock>(values_in(b) * size);
      decode_block(d->data());
      block_cache().put(id_, b, d);
      std::memcpy(out, d->data() + (start - first) * size, take * size);
    }
    out += take * size, start += take, n -= take;
  }
}

void BlockStream::read_uncached(uint64_t start, uint64_t n, void* dst) const {
  if (!coded_ || derived_) return read(start, n, dst);
  read_span(start, n, dst, false);
}

void BlockStream::byte_ranges(uint64_t start, uint64_t n, std::vector<ByteRange>& out) const {
  if (!n || start >= count_) return;
  n = std::min(n, count_ - start);
  if (!coded_) {
    out.push_back({offset_ + start * type_.size, n * type_.size});
    return;
  }
  std::vector<uint64_t> blocks;
  blocks_of(start, n, blocks);
  block_ranges(blocks, out);
}

void BlockStream::blocks_of(uint64_t start, uint64_t n, std::vector<uint64_t>& blocks) const {
  if (!n || start >= count_) return;
  n = std::min(n, count_ - start);
  for (uint64_t b = start / per_block_, e = (start + n - 1) / per_block_; b <= e; ++b)
    if (blocks.empty() || blocks.back() != b) blocks.push_back(b);
}

void BlockStream::block_ranges(std::vector<uint64_t>& blocks, std::vector<ByteRange>& out) const {
  if (!std::is_sorted(blocks.begin(), blocks.end())) std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  while (!blocks.empty() && blocks.back() >= block_count()) blocks.pop_back();
  if (derived_) {  // every value at once: the bytes they come from, unless computed already
    std::lock_guard<std::mutex> lock(computed_->m);
    if (!blocks.empty() && !computed_->values && !block_cache().find(id_, kAllValues)) derived_->ranges(out);
    return;
  }
  if (!coded_) {
    for (uint64_t b : blocks) out.push_back({offset_ + b * per_block_ * type_.size, values_in(b) * type_.size});
  } else {
    std::vector<uint64_t> to_read;  // blocks decoded already need no read
    block_cache().missing(id_, blocks, to_read);
    for (uint64_t b : to_read) out.push_back({blocks_[b].offset, blocks_[b].stored});
  }
  if (codes_ && coded_) {
    std::vector<uint64_t> same = blocks;
    codes_->block_ranges(same, out);
  }
}

void BlockStream::verify_block(uint64_t b) const {
  if (b >= block_count()) fail(b, "block out of range");
  if (coded_) {
    decode(b);  // checks the checksum, then that the block decodes
    return;
  }
  const uint64_t n = values_in(b) * type_.size;
  std::vector<unsigned char> bytes(n);
  source_->read(offset_ + b * per_block_ * type_.size, n, bytes.data());
  check_raw(b, bytes.data());
}

const void* BlockReader::span(const BlockStream& s, uint64_t start, uint64_t n) {
  if (const unsigned char* p = s.in_place(start, n)) return p;
  Slot* slot = nullptr;
  for (Slot& x : slots_)
    if (x.stream == &s) slot = &x;
  if (!slot) {
    slots_.emplace_back();
    slot = &slots_.back();
    slot->stream = &s;
  }
  const size_t size = s.value_size();
  if (slot->block && start >= slot->first && start + n <= slot->last)
    return slot->block->data() + (start - slot->first) * size;
  const uint64_t b = start / s.per_block(), first = b * s.per_block();
  if (n == 0 || start + n <= first + s.per_block()) {
    slot->block = s.block(b);
    slot->first = first;
    slot->last = first + slot->block->size() / size;
    return slot->block->data() + (start - first) * size;
  }
  if (slot->scratch.size() < n * size) slot->scratch.resize(n * size);
  s.read(start, n, slot->scratch.data());
  return slot->scratch.data();
}

uint64_t blocks_decoded() { return coded_blocks_decoded.load(std::memory_order_relaxed); }

}  // namespace motes
