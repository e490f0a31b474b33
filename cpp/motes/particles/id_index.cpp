#include "motes/particles/id_index.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <boost/sort/sort.hpp>
#include <boost/sort/spreadsort/integer_sort.hpp>
#include <cstring>
#include <type_traits>
#include <vector>

#include "motes/codec/codec.hpp"
#include "motes/core/bytes.hpp"
#include "motes/core/errors.hpp"
#include "motes/core/memory.hpp"
#include "motes/core/threads.hpp"
#include "motes/particles/layout/radix_sort.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

bool id_dtype(DType dtype) {
  return dtype == DType::i32 || dtype == DType::u32 || dtype == DType::i64 || dtype == DType::u64;
}

namespace {
// f(T{}) for an id column's type T, or the UsageError that names what an id column must be.
template <class F>
decltype(auto) with_id_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::i32: return f(int32_t{});
    case DType::u32: return f(uint32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u64: return f(uint64_t{});
    default:
      throw UsageError(std::string("an id column must be int32, uint32, int64 or uint64, not ") + dtype_name(dtype));
  }
}
// An id's key: its value as uint64, a signed id's sign bit flipped (keys order as the ids
// do); and back, the id of a key as T (its low bits).
constexpr uint64_t kSignFlip = uint64_t(1) << 63;
template <class T>
uint64_t key_of(T id) {
  return std::is_signed_v<T> ? uint64_t(int64_t(id)) ^ kSignFlip : uint64_t(id);
}
template <class T>
T id_of(uint64_t key) {
  return T(std::is_signed_v<T> ? key ^ kSignFlip : key);
}
}  // namespace

uint64_t id_key(DType dtype, const void* value) {
  return with_id_type(dtype, [&](auto z) {
    decltype(z) v;
    std::memcpy(&v, value, sizeof v);
    return key_of(v);
  });
}

void id_of_key(DType dtype, uint64_t key, void* out) {
  with_id_type(dtype, [&](auto z) {
    const auto v = id_of<decltype(z)>(key);
    std::memcpy(out, &v, sizeof v);
  });
}

void code_index_blocks(const void* values, uint64_t n, DType dtype, int zstd_level, unsigned threads, std::string& out,
                       std::vector<StoredBlock>& blocks, Lookup lookup) {
  const codec::ValueType type = codec::value_type(uint8_t(dtype));
  const uint64_t bv = spec::kIdBlockValues, nb = (n + bv - 1) / bv;
  const unsigned char* v = static_cast<const unsigned char*>(values);
  std::vector<codec::Sample> samples;  // up to 8 blocks spread over the stream
  const uint64_t m = std::min<uint64_t>(nb, 8);
  for (uint64_t k = 0; k < m; ++k) {
    const uint64_t b = m > 1 ? k * (nb - 1) / (m - 1) : 0;
    samples.push_back({v + b * bv * type.size, size_t(std::min(bv, n - b * bv)), {}});
  }
  codec::Plan plan;
  codec::Context ctx;
  if (lookup == Lookup::packed) {
    plan.predictor = codec::Predictor::offset, plan.layout = codec::Layout::packed, plan.coders = {codec::Coder::raw};
  } else if (lookup == Lookup::smallest) {
    // Packed words in the unit size that stores them smallest (a run of consecutive ids is
    // one linear unit of 4096 keys with no bits per key), unless entropy-coded blocks take at
    // most kLookupCodedShare of their bytes (rows of ids that are nearly sorted in the
    // file's order: a lookup then decodes a block, which the cache keeps).
    plan.predictor = codec::Predictor::offset, plan.layout = codec::Layout::packed, plan.coders = {codec::Coder::raw};
    ctx.packed_unit = 0;
    const codec::Plan coded = codec::choose(type, {codec::Predictor::none, codec::Predictor::delta}, samples, zstd_level, false);
    uint64_t packed_bytes = 0, coded_bytes = 0;
    std::string trial;
    for (const codec::Sample& s : samples) {
      codec::encode(plan, type, s.values, s.count, ctx, trial);
      packed_bytes += trial.size();
      codec::encode(coded, type, s.values, s.count, {}, trial);
      coded_bytes += trial.size();
    }
    uint64_t entries = 0;
    for (const codec::Sample& s : samples) entries += s.count;
    // Worth a decoded block per lookup only when it saves a share of the bytes and at least a
    // bit per entry (a run of consecutive keys is 48 bytes per block packed: kept packed).
    if (double(coded_bytes) <= kLookupCodedShare * double(packed_bytes) && (packed_bytes - coded_bytes) * 8 >= entries)
      plan = coded, ctx = {};
  } else {
    plan = codec::choose(type, {codec::Predictor::none, codec::Predictor::delta}, samples, zstd_level, true);
  }
  std::vector<std::string> coded(nb);
  parallel_for(nb, threads, [&](uint64_t b) {
    codec::encode(plan, type, v + b * bv * type.size, size_t(std::min(bv, n - b * bv)), ctx, coded[b]);
  });
  blocks.resize(nb);
  for (uint64_t b = 0; b < nb; ++b) {
    blocks[b] = StoredBlock{out.size(), uint32_t(coded[b].size()), container::checksum(coded[b].data(), coded[b].size())};
    out += coded[b];
  }
}


namespace {

// The keys of the ids at file positions 0..n (the input row order[p] of each), in file order.
// The rows are read where the layout put them: the ones kAhead on are asked for ahead.
BigVector<uint64_t> keys_in_file_order(DType dtype, const unsigned char* src, int64_t stride, uint64_t n,
                                       const uint64_t* order, unsigned threads) {
  BigVector<uint64_t> keys(n);
  with_id_type(dtype, [&](auto z) {
    using T = decltype(z);
    constexpr uint64_t kAhead = 16;
    parallel_for((n + 65535) / 65536, threads, [&](uint64_t c) {
      for (uint64_t p = c * 65536, e = std::min(n, (c + 1) * 65536); p < e; ++p) {
        if (p + kAhead < e) __builtin_prefetch(src + int64_t(order[p + kAhead]) * stride);
        T v;
        std::memcpy(&v, src + int64_t(order[p]) * stride, sizeof v);
        keys[p] = key_of(v);
      }
    });
  });
  return keys;
}

// Sorts the ids' keys, each with its file position (keys[p] is position p's), by key then
// position: keys become the sorted keys and rows[i] the position of keys[i] (rows has n
// entries of R, u32 or u64). When the keys span fewer than 2^32 values and there are at most
// 2^32 positions, each is one word (key - lowest) << 32 | position, and the layout's stable
// LSD radix sort of the words on their key bits alone orders them (they start in position
// order): 2 or 3 passes over 8 bytes per id. With a comparison sort of (key, position) pairs
// the id index took 0.34-0.42 s of CPU of a 2.6M-particle write on one thread (a rank of the
// main job: bench/README.md, the main job's write), with this sort 0.12-0.14 s. Else (keys
// spread wider) the pairs are sorted as before.
template <class R>
void sort_keys_with_rows(BigVector<uint64_t>& keys, std::vector<R>& rows, unsigned threads) {
  const uint64_t n = keys.size();
  rows.resize(n);
  if (n == 0) return;
  const auto [lo_it, hi_it] = std::minmax_element(keys.begin(), keys.end());
  const uint64_t lo = *lo_it, span = *hi_it - lo;
  if (n > (uint64_t(1) << 32) || span >= (uint64_t(1) << 32)) {
    std::vector<std::pair<uint64_t, uint64_t>> entries(n);
    for (uint64_t p = 0; p < n; ++p) entries[p] = {keys[p], p};
    boost::sort::block_indirect_sort(entries.begin(), entries.end(), threads ? threads : default_threads());
    for (uint64_t i = 0; i < n; ++i) keys[i] = entries[i].first, rows[i] = R(entries[i].second);
    return;
  }
  BigVector<uint64_t> words(n), scratch(n);
  for (uint64_t p = 0; p < n; ++p) words[p] = (keys[p] - lo) << 32 | p;
  sort_low_code_bits(words.data(), n, scratch.data(), int(std::bit_width(span)), threads ? threads : default_threads());
  for (uint64_t i = 0; i < n; ++i) keys[i] = (words[i] >> 32) + lo, rows[i] = R(uint32_t(words[i]));
}

}  // namespace

IdIndexSections build_id_index(uint32_t column, DType dtype, const void* values, int64_t stride, uint64_t n,
                               const uint64_t* order, int zstd_level, unsigned threads, bool smallest) {
  const Lookup lookup = smallest ? Lookup::smallest : Lookup::packed;
  if (!id_dtype(dtype)) id_key(dtype, values);  // throws naming the dtype
  BigVector<uint64_t> keys = keys_in_file_order(dtype, static_cast<const unsigned char*>(values), stride, n, order, threads);
  IdIndexSections s;
  s.column = column;
  auto code = [&](auto& rows, DType row_dtype) {
    sort_keys_with_rows(keys, rows, threads);
    const uint64_t bv = spec::kIdBlockValues, nb = (n + bv - 1) / bv;
    std::vector<uint64_t> fences(2 * nb);
    for (uint64_t b = 0; b < nb; ++b) fences[2 * b] = keys[b * bv], fences[2 * b + 1] = keys[std::min(n, (b + 1) * bv) - 1];
    s.fences.assign(reinterpret_cast<const char*>(fences.data()), fences.size() * 8);
    code_index_blocks(keys.data(), n, DType::u64, zstd_level, threads, s.keys, s.key_blocks, lookup);
    BigVector<uint64_t>().swap(keys);
    code_index_blocks(rows.data(), n, row_dtype, zstd_level, threads, s.rows, s.row_blocks, lookup);
  };
  if (n <= (uint64_t(1) << 32)) {
    std::vector<uint32_t> rows;
    code(rows, DType::u32);
  } else {
    std::vector<uint64_t> rows;
    code(rows, DType::u64);
  }
  return s;
}

IdIndex::IdIndex(std::shared_ptr<const ByteSource> source, const std::string& file, uint32_t column, uint64_t count,
                 std::vector<StoredBlock> key_blocks, std::vector<StoredBlock> row_blocks, const std::string& fences)
    : file_(file), column_(column), count_(count) {
  const uint64_t bv = spec::kIdBlockValues, nb = (count + bv - 1) / bv;
  if (fences.size() != nb * 16) throw FormatError(file + ": the id index fences have the wrong length");
  fences_.resize(2 * nb);
  std::memcpy(fences_.data(), fences.data(), fences.size());
  for (uint64_t i = 1; i < fences_.size(); ++i)
    if (fences_[i] < fences_[i - 1]) throw FormatError(file + ": the id index fences do not ascend");
  keys_ = BlockStream::coded(source, "id index keys", uint8_t(DType::u64), count, bv, std::move(key_blocks));
  const DType rows = count <= (uint64_t(1) << 32) ? DType::u32 : DType::u64;
  rows_ = BlockStream::coded(source, "id index rows", uint8_t(rows), count, bv, std::move(row_blocks));
}

uint64_t IdIndex::first_block(uint64_t key) const {
  uint64_t lo = 0, hi = fences_.size() / 2;
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (fences_[2 * mid + 1] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

namespace {

// One block of the id index at a time: its keys and rows read where they lie when both are
// packed words (a lookup reads a few words), else from the decoded blocks.
class IndexBlock {
 public:
  IndexBlock(const BlockStream& keys, const BlockStream& rows, const std::string& file) : keys_(keys), rows_(rows), file_(file) {}
  // Moves to block b of m entries from entry `first`.
  void at(uint64_t b, uint64_t first, uint64_t m) {
    if (b == block_) return;
    block_ = b, first_ = first, m_ = m;
    packed_ = keys_.addressable(b, key_view_, key_buf_) && rows_.addressable(b, row_view_, row_buf_);
    k_ = packed_ ? nullptr : key_reader_.values<uint64_t>(keys_, first, m);
  }
  uint64_t key(uint64_t j) {
    if (k_) return k_[j];
    unsigned char v[8];
    if (!key_view_.value(size_t(j), nullptr, nullptr, v)) damaged("keys");
    return load<uint64_t>(v);
  }
  uint64_t row(uint64_t j) {
    const bool wide = rows_.value_size() == 8;
    if (!packed_) return wide ? row_reader_.values<uint64_t>(rows_, first_ + j, 1)[0] : row_reader_.values<uint32_t>(rows_, first_ + j, 1)[0];
    unsigned char v[8] = {};
    if (!row_view_.value(size_t(j), nullptr, nullptr, v)) damaged("rows");
    return wide ? load<uint64_t>(v) : load<uint32_t>(v);
  }
  // The first entry whose key is >= key (m when none). `lo`, `hi`: the block's first and
  // last keys (its fences): a search of packed keys starts where the key would lie were the
  // keys evenly spread (ids usually are), then widens, a few words instead of a dozen.
  uint64_t lower_bound(uint64_t key, uint64_t lo, uint64_t hi) {
    uint64_t a = 0, b = m_;
    if (!k_ && m_ > 2 && hi > lo && key > lo && key <= hi) {
      const uint64_t guess = std::min<uint64_t>(m_ - 1, uint64_t(double(key - lo) / double(hi - lo) * double(m_ - 1)));
      uint64_t step = 1;
      if (this->key(guess) < key) {  // the answer is past guess: widen upwards
        a = guess + 1;
        while (a + step - 1 < m_ && this->key(a + step - 1) < key) a += step, step *= 2;
        b = std::min(m_, a + step - 1);
      } else {  // at or before guess: widen downwards
        b = guess;
        while (b >= step && this->key(b - step) >= key) b -= step, step *= 2;
        a = b >= step ? b - step + 1 : 0;
      }
    }
    while (a < b) {
      const uint64_t mid = (a + b) / 2;
      if (this->key(mid) < key) a = mid + 1;
      else b = mid;
    }
    return a;
  }

 private:
  const BlockStream &keys_, &rows_;
  const std::string& file_;
  uint64_t block_ = UINT64_MAX, first_ = 0, m_ = 0;
  bool packed_ = false;
  codec::AddressableBlock key_view_, row_view_;
  std::vector<unsigned char> key_buf_, row_buf_;
  BlockReader key_reader_, row_reader_;
  const uint64_t* k_ = nullptr;
  [[noreturn]] void damaged(const char* what) const {
    throw FormatError(file_ + ": id index " + what + ", block " + std::to_string(block_) + ": a packed word lies outside its block");
  }
};

}  // namespace

void IdIndex::find(const uint64_t* keys, size_t n, int64_t* rows) const {
  const uint64_t bv = spec::kIdBlockValues, nb = fences_.size() / 2;
  IndexBlock block(keys_, rows_, file_);
  for (size_t i = 0; i < n; ++i) {
    rows[i] = -1;
    const uint64_t key = keys[i];
    const uint64_t lo = first_block(key);
    if (lo == nb || fences_[2 * lo] > key) continue;
    const uint64_t first = lo * bv, m = std::min(bv, count_ - first);
    block.at(lo, first, m);
    const uint64_t j = block.lower_bound(key, fences_[2 * lo], fences_[2 * lo + 1]);
    if (j == m || block.key(j) != key) continue;
    if ((j + 1 < m && block.key(j + 1) == key) || (j + 1 == m && lo + 1 < nb && fences_[2 * (lo + 1)] == key))
      throw FormatError(file_ + ": id " + std::to_string(key) + " (as a key) is held by two particles");
    const uint64_t r = block.row(j);
    if (r >= count_) throw FormatError(file_ + ": id index block " + std::to_string(lo) + " names position " + std::to_string(r));
    rows[i] = int64_t(r);
  }
}

std::vector<uint64_t> IdIndex::positions(const uint64_t* keys, size_t n) const {
  const uint64_t bv = spec::kIdBlockValues, nb = fences_.size() / 2;
  IndexBlock block(keys_, rows_, file_);
  std::vector<uint64_t> out;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t key = keys[i];
    for (uint64_t b = first_block(key); b < nb && fences_[2 * b] <= key; ++b) {  // a key may run on into the next blocks
      const uint64_t first = b * bv, m = std::min(bv, count_ - first);
      block.at(b, first, m);
      for (uint64_t j = block.lower_bound(key, fences_[2 * b], fences_[2 * b + 1]); j < m && block.key(j) == key; ++j) {
        const uint64_t r = block.row(j);
        if (r >= count_) throw FormatError(file_ + ": id index block " + std::to_string(b) + " names position " + std::to_string(r));
        out.push_back(r);
      }
      if (fences_[2 * b + 1] != key) break;
    }
  }
  boost::sort::spreadsort::integer_sort(out.begin(), out.end());
  return out;
}

void gather_rows(const BlockStream& s, const int64_t* rows, size_t n, void* out) {
  const size_t size = s.value_size();
  // Positions given ascending (a caller gathering several columns sorts them once): read
  // block by block as they are.
  bool ascending = true;
  for (size_t i = 0; i < n && ascending; ++i)
    ascending = rows[i] >= 0 && uint64_t(rows[i]) < s.count() && (i == 0 || rows[i] > rows[i - 1]);
  if (ascending) {
    s.gather(reinterpret_cast<const uint64_t*>(rows), n, out);  // non-negative: the same bits
    return;
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i)
    if (rows[i] >= 0) {
      if (uint64_t(rows[i]) >= s.count()) throw UsageError("position " + std::to_string(rows[i]) + " is past the file's " + std::to_string(s.count()) + " particles");
      order.push_back(i);
    }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a] < rows[b]; });  // block by block
  std::vector<uint64_t> pos(order.size());
  for (size_t q = 0; q < order.size(); ++q) pos[q] = uint64_t(rows[order[q]]);
  std::vector<unsigned char> values(order.size() * size);
  s.gather(pos.data(), pos.size(), values.data());
  unsigned char* dst = static_cast<unsigned char*>(out);
  for (size_t q = 0; q < order.size(); ++q) std::memcpy(dst + order[q] * size, values.data() + q * size, size);
}

void IdIndex::verify() const {
  const uint64_t bv = spec::kIdBlockValues, nb = fences_.size() / 2;
  BlockReader reader;
  for (uint64_t b = 0; b < nb; ++b) {
    keys_.verify_block(b);
    rows_.verify_block(b);
    const uint64_t first = b * bv, m = std::min(bv, count_ - first);
    const uint64_t* k = reader.values<uint64_t>(keys_, first, m);
    if (k[0] != fences_[2 * b] || k[m - 1] != fences_[2 * b + 1] || !std::is_sorted(k, k + m))
      throw FormatError(file_ + ": id index block " + std::to_string(b) + " disagrees with its fences or is not sorted");
    for (uint64_t j = 0; j < m; ++j) {
      const uint64_t r = rows_.value_size() == 8 ? *reader.values<uint64_t>(rows_, first + j, 1)
                                                 : *reader.values<uint32_t>(rows_, first + j, 1);
      if (r >= count_) throw FormatError(file_ + ": id index block " + std::to_string(b) + " names position " + std::to_string(r));
    }
  }
}

namespace {

// The id column of a file written with ids-by-index: each key's id at its row.
//
// The rows are checked to be a permutation of the positions as they are scattered: each
// lane of threads takes a contiguous run of blocks and marks the positions it writes in a
// bitmap of its own (plain loads and stores: an atomic read-modify-write per row, shared by
// the lanes, waited for each row's scattered store to reach the cache before the next: 10M
// synth ids took 0.60 s of CPU, now 0.17 s), then the lanes' bitmaps are merged: n rows below
// n with no position marked twice, within a lane or across two, are a permutation.
class IdColumn final : public ComputedValues {
 public:
  IdColumn(const BlockStream& keys, const BlockStream& rows, DType dtype, uint64_t count, std::string file)
      : keys_(keys), rows_(rows), dtype_(dtype), count_(count), file_(std::move(file)) {}
  void compute(unsigned char* dst) const override {
    with_id_type(dtype_, [&](auto z) { compute_as<decltype(z)>(dst); });
  }
  void ranges(std::vector<ByteRange>& out) const override {
    keys_.byte_ranges(0, count_, out);
    rows_.byte_ranges(0, count_, out);
  }
  std::string source_name() const override { return "id index"; }

 private:
  // Scatters the ids of keys[0..m) to their rows rows[0..m) in out, marking each row in
  // `seen`; false at a row past the count or marked already.
  template <class T, class R>
  static bool scatter(const uint64_t* keys, const R* rows, uint64_t m, uint64_t n, uint64_t* seen, T* out) {
    // Rows land anywhere in the file: the ones kAhead on are asked for while these are stored.
    constexpr uint64_t kAhead = 16;
    for (uint64_t i = 0; i < m; ++i) {
      if (i + kAhead < m && rows[i + kAhead] < n) {
        __builtin_prefetch(out + rows[i + kAhead], 1);
        __builtin_prefetch(seen + rows[i + kAhead] / 64, 1);
      }
      const uint64_t p = rows[i];
      if (p >= n) return false;
      const uint64_t bit = uint64_t(1) << (p % 64), word = seen[p / 64];
      if (word & bit) return false;
      seen[p / 64] = word | bit;
      out[p] = id_of<T>(keys[i]);
    }
    return true;
  }
  template <class T>
  void compute_as(unsigned char* dst) const {
    const uint64_t n = count_, bv = spec::kIdBlockValues, nb = (n + bv - 1) / bv, words = (n + 63) / 64;
    const bool wide = rows_.value_size() == 8;
    const unsigned lanes = unsigned(std::clamp<uint64_t>(default_threads(), 1, std::max<uint64_t>(nb, 1)));
    std::vector<std::vector<uint64_t>> seen(lanes);
    std::atomic<bool> bad{false};
    T* out = reinterpret_cast<T*>(dst);
    parallel_for(lanes, lanes, [&](uint64_t lane) {
      std::vector<uint64_t>& mine = seen[lane];
      mine.assign(words, 0);
      std::vector<uint64_t> keys(bv), rows64(wide ? bv : 0);
      std::vector<uint32_t> rows32(wide ? 0 : bv);
      for (uint64_t b = nb * lane / lanes, e = nb * (lane + 1) / lanes; b < e && !bad.load(std::memory_order_relaxed); ++b) {
        const uint64_t first = b * bv, m = std::min(bv, n - first);
        keys_.read_uncached(first, m, keys.data());
        bool ok;
        if (wide) {
          rows_.read_uncached(first, m, rows64.data());
          ok = scatter(keys.data(), rows64.data(), m, n, mine.data(), out);
        } else {
          rows_.read_uncached(first, m, rows32.data());
          ok = scatter(keys.data(), rows32.data(), m, n, mine.data(), out);
        }
        if (!ok) bad.store(true, std::memory_order_relaxed);
      }
    });
    for (unsigned lane = 1; lane < lanes && !bad.load(); ++lane) {
      uint64_t* a = seen[0].data();
      const uint64_t* b = seen[lane].data();
      uint64_t twice = 0;
      for (uint64_t w = 0; w < words; ++w) twice |= a[w] & b[w], a[w] |= b[w];
      if (twice) bad.store(true);
    }
    if (bad.load()) throw FormatError(file_ + ": the id index rows are not a permutation of the positions, so the id column they store cannot be read");
  }

  BlockStream keys_, rows_;
  DType dtype_;
  uint64_t count_;
  std::string file_;
};

}  // namespace

std::shared_ptr<const ComputedValues> IdIndex::column_values(DType dtype) const {
  return std::make_shared<IdColumn>(keys_, rows_, dtype, count_, file_);
}

}  // namespace motes
