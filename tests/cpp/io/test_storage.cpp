// Byte sources and the block reader: a file reads the same from a path, from memory and
// from any reader of byte ranges; opening reads only the structure, and a query reads
// only the index sections and blocks it needs.
#include <gtest/gtest.h>

#include <cstdlib>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <set>

#include "motes/analysis/analysis.hpp"
#include "motes/container/block_stream.hpp"
#include "motes/io/byte_source.hpp"
#include "motes/particles/reader.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string write_file(uint64_t n, Compression c, const std::string& name) {
  auto cols = test::make_columns(n, 3);
  WriteOptions o;
  o.layout.leaf_size = 64;
  o.layout.treelet_size = 4096;
  o.block_values = 1024;
  o.compression = c;
  o.sync = false;
  std::string path = test::temp_path(name);
  write_particle_file(path, cols.views(), o);
  return path;
}

// A source that counts the bytes read, and remembers which.
struct Counting {
  std::string bytes;
  std::mutex m;
  uint64_t read = 0;
  std::set<uint64_t> pages;
  std::shared_ptr<const ByteSource> source() {
    return range_source("<counting>", bytes.size(), [this](uint64_t off, uint64_t n, void* dst) {
      std::memcpy(dst, bytes.data() + off, n);
      std::lock_guard lock(m);
      read += n;
      for (uint64_t p = off / 4096; p <= (off + n - 1) / 4096; ++p) pages.insert(p);
    });
  }
};

std::vector<double> energies(const std::shared_ptr<const ParticleFile>& f, const std::string& where) {
  QuerySpec q;
  q.where = where;
  q.threads = 2;
  Query query(f, q);
  Selection s(query);
  std::vector<float> e(s.size());
  s.gather(f->column("energy"), 0, s.size(), e.data(), 2);
  return std::vector<double>(e.begin(), e.end());
}

class StorageBoth : public ::testing::TestWithParam<Compression> {};
INSTANTIATE_TEST_SUITE_P(Compression, StorageBoth, ::testing::Values(Compression::none, Compression::lossless),
                         [](const auto& info) { return info.param == Compression::none ? "none" : "lossless"; });

}  // namespace

TEST_P(StorageBoth, EverySourceGivesTheSameAnswers) {
  const std::string path = write_file(30000, GetParam(), "sources.mpf");
  auto from_path = ParticleFile::open(path, true);
  auto from_memory = ParticleFile::open(memory_source(slurp(path), "<bytes>"), true);
  Counting counting;
  counting.bytes = slurp(path);
  auto from_ranges = ParticleFile::open(counting.source(), true);
  for (const char* where : {"energy > 0.5", "noise < -1.5 or kind == 0", "x > 0.3 and x < 0.6 and y > 0.1"}) {
    auto a = energies(from_path, where);
    EXPECT_FALSE(a.empty()) << where;
    EXPECT_EQ(a, energies(from_memory, where)) << where;
    EXPECT_EQ(a, energies(from_ranges, where)) << where;
  }
  EXPECT_EQ(from_memory->path(), "<bytes>");
}

TEST_P(StorageBoth, OpeningAndASmallQueryReadOnlyWhatTheyNeed) {
  const std::string path = write_file(200000, GetParam(), "lazy.mpf");
  Counting counting;
  counting.bytes = slurp(path);
  clear_block_cache();
  auto f = ParticleFile::open(counting.source(), false);
  const uint64_t opened = counting.read;
  // Opening reads the header, the table and the structure sections, not the per-node indexes.
  EXPECT_LT(opened, counting.bytes.size() / 20) << opened << " of " << counting.bytes.size();
  QuerySpec q;
  q.box = Box{{0.19, 0.19, 0.19}, {0.21, 0.21, 0.21}};
  q.threads = 1;
  Query query(f, q);
  const uint64_t n = count(query);
  EXPECT_GT(n, 0u);
  // A box query reads x, y and z's index and a few of their blocks: a small part of the file.
  EXPECT_LT(counting.read, counting.bytes.size() / 4) << counting.read << " of " << counting.bytes.size();
}

TEST(Storage, BlockStreamsReadAnySpanAcrossBlocks) {
  const std::string path = write_file(20000, Compression::lossless, "spans.mpf");
  auto f = ParticleFile::open(path, false);
  const BlockStream& s = f->values(f->column("noise"));
  ASSERT_TRUE(s.is_coded());
  std::vector<double> all(f->particle_count());
  s.read(0, all.size(), all.data());
  BlockReader reader;
  std::mt19937_64 rng(2);
  for (int k = 0; k < 500; ++k) {
    uint64_t start = rng() % all.size(), n = 1 + rng() % std::min<uint64_t>(5000, all.size() - start);
    const double* p = reader.values<double>(s, start, n);
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(std::memcmp(&p[i], &all[start + i], 8), 0) << start << "+" << i;
  }
}

// A bulk read decodes the blocks it misses from runs of their stored bytes read at once: the
// values are those of the same file written uncompressed, for any span (whole blocks, parts of
// blocks at either end, blocks held decoded already between others), from every kind of
// source, whether the cache has room for the blocks or not; a damaged block inside a run is a
// FormatError naming that block.
TEST(Storage, BulkReadsDecodeRunsOfBlocksAsStored) {
  const std::string packed = write_file(40000, Compression::lossless, "runs.mpf");
  const std::string plain = write_file(40000, Compression::none, "runs_plain.mpf");
  auto want = ParticleFile::open(plain, false);
  Counting counting;
  counting.bytes = slurp(packed);
  const uint64_t budget = block_cache_bytes();
  for (int source = 0; source < 3; ++source) {
    for (uint64_t limit : {budget, uint64_t(48) << 10}) {  // room for every block, or for a few
      set_block_cache_bytes(limit);
      clear_block_cache();
      auto f = source == 0   ? ParticleFile::open(packed, false)
               : source == 1 ? ParticleFile::open(memory_source(slurp(packed), "<bytes>"), false)
                             : ParticleFile::open(counting.source(), false);
      std::mt19937_64 rng(uint64_t(source) * 7 + (limit == budget));
      for (size_t c = 0; c < f->schema().size(); ++c) {
        const BlockStream& s = f->values(c);
        const BlockStream& w = want->values(c);
        ASSERT_EQ(s.count(), w.count());
        const uint32_t size = s.value_size();
        for (int k = 0; k < 40; ++k) {
          const uint64_t per = s.per_block();
          uint64_t start = k == 0 ? 0 : rng() % s.count();
          if (k % 3 == 1) start = start / per * per;  // from a block's first value
          const uint64_t n = k == 0 ? s.count() : 1 + rng() % std::min<uint64_t>(12 * per, s.count() - start);
          if (k % 4 == 2) s.block((start + n / 2) / per);  // a block held decoded inside the span
          std::vector<unsigned char> got(n * size), expect(n * size);
          s.read(start, n, got.data());
          w.read(start, n, expect.data());
          ASSERT_EQ(got, expect) << source << " " << limit << " " << f->schema()[c].name << " " << start << "+" << n;
        }
      }
    }
  }
  set_block_cache_bytes(budget);
  // A byte of block 5 of the energy column changed: a read of blocks 2-9 fails there.
  clear_block_cache();
  std::string bytes = slurp(packed);
  {
    auto f = ParticleFile::open(memory_source(bytes, "<bytes>"), false);
    const StoredBlock& b = f->values(f->column("energy")).blocks()[5];
    bytes[b.offset + b.stored / 2] ^= 0x10;
  }
  for (int source = 1; source < 3; ++source) {
    clear_block_cache();
    counting.bytes = bytes;
    auto f = source == 1 ? ParticleFile::open(memory_source(bytes, "<bytes>"), false) : ParticleFile::open(counting.source(), false);
    const BlockStream& s = f->values(f->column("energy"));
    std::vector<float> out(8 * s.per_block());
    try {
      s.read(2 * s.per_block(), out.size(), out.data());
      FAIL() << "a damaged block was read";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("block 5: checksum mismatch"), std::string::npos) << e.what();
    }
  }
}

TEST(Storage, TheCacheKeepsToItsBudget) {
  const std::string path = write_file(100000, Compression::lossless, "cache.mpf");
  const uint64_t before = block_cache_bytes();
  set_block_cache_bytes(64 << 10);
  clear_block_cache();
  auto f = ParticleFile::open(path, false);
  for (size_t c = 0; c < f->schema().size(); ++c) {
    const BlockStream& s = f->values(c);
    for (uint64_t b = 0; b < s.block_count(); ++b) s.block(b);
  }
  EXPECT_LE(block_cache_used(), uint64_t(64 << 10));
  set_block_cache_bytes(before);
}

TEST(Storage, CoalescedRangesCoverEveryRangeOnce) {
  std::vector<ByteRange> r{{100, 10}, {0, 5}, {105, 20}, {300, 1}, {6, 4}, {0, 0}};
  auto c = coalesce(r, 0);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].offset, 0u);
  EXPECT_EQ(c[0].length, 5u);
  EXPECT_EQ(c[1].offset, 6u);
  EXPECT_EQ(c[2].offset, 100u);
  EXPECT_EQ(c[2].length, 25u);
  auto g = coalesce(r, 100);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].length, 125u);
}

TEST(Storage, TheReadGapIsOneValueTheEnvironmentMayOverride) {
  ::unsetenv("MOTES_READ_GAP_KB");
  EXPECT_EQ(read_gap(), kReadGap);
  ::setenv("MOTES_READ_GAP_KB", "4", 1);
  EXPECT_EQ(read_gap(), 4096u);
  ::setenv("MOTES_READ_GAP_KB", "4k", 1);  // not a number: the default
  EXPECT_EQ(read_gap(), kReadGap);
  ::unsetenv("MOTES_READ_GAP_KB");
}
