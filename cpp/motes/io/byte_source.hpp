// Where a file's bytes come from: a path (pread, and a read-only mapping on demand for
// values read in place), bytes in memory, or any reader of byte ranges (the viewer's
// server, object stores). Parsers take a ByteSource, never a path, so every reader works
// on every source and fuzzers feed their input bytes directly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace motes {

struct ByteRange {
  uint64_t offset = 0, length = 0;
};

// What a source asked of its medium for a hint (will_need): requests sent and their bytes.
struct ReadCount {
  uint64_t requests = 0, bytes = 0;
};

class ByteSource {
 public:
  ByteSource();
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Names the source in errors: a path, "<memory>", a URL.
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset into dst; FormatError naming the source when it ends
  // first (a file truncated under the reader), Error when the system fails.
  virtual void read(uint64_t offset, uint64_t n, void* dst) const = 0;
  // All the bytes, addressable in memory (a mapped file, a buffer); nullptr when the source
  // cannot give them without copying. Valid while the source lives.
  virtual const unsigned char* data() const { return nullptr; }
  // True when data() is cheap (memory); a file maps itself on its first data() call.
  virtual bool in_memory() const { return false; }
  // Hint: these ranges will be read soon; a file starts reading them now, all at once, so
  // a query's scattered reads overlap instead of waiting one after the other. The ranges are
  // exact (any order, overlapping or not): each source coalesces them at its own medium's
  // gap (a file at read_gap(), a remote store at remote_read_gap()) and returns the requests
  // it makes of its medium: none for memory; a file, its plan's (whether the kernel holds the
  // pages is the system's to know); a remote source, those it really sends (not for bytes it
  // holds already). The one place reads are planned into requests.
  virtual ReadCount will_need(const std::vector<ByteRange>& ranges) const {
    (void)ranges;
    return {};
  }
  // FormatError when the source changed size since it was opened.
  virtual void check_unchanged() const {}
  // Which file this is, across opens (a file: its device and inode, hashed); 0 when the
  // source is not a file. With a checksum of the contents it keys what outlives one open
  // (decoded blocks), so reopening a file does not decode again.
  virtual uint64_t file_identity() const { return 0; }

  // Unique in the process (keys of caches): never reused, unlike addresses.
  uint64_t id() const { return id_; }
  std::string read(uint64_t offset, uint64_t n) const;

 private:
  uint64_t id_;
};

// A regular file (no FIFO, device or directory; checked without blocking) of at most
// max_bytes; FormatError/NotFoundError naming `what` and the path otherwise.
std::shared_ptr<const ByteSource> open_file_source(const std::string& path, const std::string& what,
                                                   uint64_t max_bytes = UINT64_MAX);
// Bytes held in memory (copied in, or moved).
std::shared_ptr<const ByteSource> memory_source(std::string bytes, std::string name = "<memory>");
// Any reader of byte ranges: read(offset, n, dst) must fill dst or throw.
std::shared_ptr<const ByteSource> range_source(std::string name, uint64_t size,
                                               std::function<void(uint64_t, uint64_t, void*)> read);

// Coalesces ranges (sorted by offset, merged when closer than `gap` bytes).
std::vector<ByteRange> coalesce(std::vector<ByteRange> ranges, uint64_t gap);

// The gap a file's read plan reads through rather than asking for the ranges on either side
// apart: one request instead of two, at the price of the bytes between. The one value every
// hint to a file uses (a query's, a selection's gathers, a bulk read's: ByteSource::will_need
// coalesces with it), measured by bench/read_plan.py:
// cold, 4M and 16M particles, gaps of 0, 4 and 16 KiB came within 1-7 % of each other (a 1 %
// box 1.7 times faster than at 256 KiB, which read the regions around it whole; tails
// unchanged), and 16 KiB asks for the fewest requests of the three. MOTES_READ_GAP_KB
// overrides it (read at each plan).
inline constexpr uint64_t kReadGap = uint64_t(16) << 10;
uint64_t read_gap();

}  // namespace motes
