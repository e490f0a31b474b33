#include "motes/io/byte_source.hpp"

#include "motes/core/lru.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "motes/core/types.hpp"
#include "motes/io/files.hpp"
#include "motes/io/remote.hpp"

namespace motes {

namespace {

std::atomic<uint64_t> next_id{1};

[[noreturn]] void past_end(const std::string& name, uint64_t offset, uint64_t n, uint64_t size) {
  throw FormatError(name + ": a read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                    " runs past the end of the " + std::to_string(size) + "-byte file (truncated?)");
}

class FileSource final : public ByteSource {
 public:
  FileSource(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {
    struct stat st {};
    if (::fstat(fd_, &st) == 0) {
      const uint64_t key[2] = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
      identity_ = XXH3_64bits(key, sizeof key) | 1;  // never 0
    }
  }
  ~FileSource() override {
    if (map_) ::munmap(const_cast<unsigned char*>(map_), size_);
    ::close(fd_);
  }
  const std::string& name() const override { return path_; }
  uint64_t size() const override { return size_; }

  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset) past_end(path_, offset, n, size_);
    char* out = static_cast<char*>(dst);
    uint64_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out + done, n - done, off_t(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw_errno("cannot read", path_);
      if (r == 0)
        throw FormatError(path_ + ": the file ends at byte " + std::to_string(offset + done) +
                          ", inside a section (truncated while open?)");
      done += uint64_t(r);
    }
  }

  const unsigned char* data() const override {
    std::call_once(mapped_, [&] {
      if (size_ == 0) return;
      void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
      if (m == MAP_FAILED) throw_errno("cannot map", path_);
      map_ = static_cast<const unsigned char*>(m);
    });
    return map_;
  }

  ReadCount will_need(const std::vector<ByteRange>& ranges) const override {
    ReadCount sent;
#ifdef POSIX_FADV_WILLNEED
    // The plan's requests, within the file: counted hinted or not (whether the kernel holds
    // the pages already is the system's to know, and the count stays the same from one run
    // to the next).
    std::vector<ByteRange> plan;
    for (ByteRange r : coalesce(ranges, read_gap()))
      if (r.length && r.offset < size_) {
        r.length = std::min(r.length, size_ - r.offset);
        plan.push_back(r), ++sent.requests, sent.bytes += r.length;
      }
    // A hot query (its pages in memory already) would pay a walk of the page cache per range
    // for nothing: when the mapping shows the first page of the first few ranges resident,
    // the query is taken as hot and nothing is asked. A file whose values were not read in
    // place yet (coded blocks are read with pread) is mapped for that test: no page of it is
    // touched.
    if (mapped() && looks_resident(plan)) return sent;
    for (const ByteRange& r : plan) ::posix_fadvise(fd_, off_t(r.offset), off_t(r.length), POSIX_FADV_WILLNEED);
#else
    (void)ranges;
#endif
    return sent;
  }

  // Whether the file is mapped, mapping it now if need be; false when it cannot be (the hint
  // is then given whole).
  bool mapped() const {
    try {
      return data() != nullptr;
    } catch (const std::exception&) {
      return false;
    }
  }

  bool looks_resident(const std::vector<ByteRange>& ranges) const {
    static const uint64_t page = uint64_t(::sysconf(_SC_PAGE_SIZE));
    size_t checked = 0;
    for (const ByteRange& r : ranges) {
      if (!r.length || r.offset >= size_) continue;
      unsigned char in = 0;
      const uint64_t p0 = r.offset / page * page;
      if (::mincore(const_cast<unsigned char*>(map_) + p0, 1, &in) != 0 || !(in & 1)) return false;
      if (++checked == 8) break;
    }
    return true;
  }

  uint64_t file_identity() const override { return identity_; }

  void check_unchanged() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw_errno("cannot stat", path_);
    if (uint64_t(st.st_size) != size_)
      throw FormatError(path_ + ": the file changed size while open (" + std::to_string(size_) + " -> " +
                        std::to_string(st.st_size) + " bytes): another process truncated or rewrote it in place");
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  uint64_t identity_ = 0;
  mutable std::once_flag mapped_;
  mutable const unsigned char* map_ = nullptr;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) past_end(name_, offset, n, bytes_.size());
    if (n) std::memcpy(dst, bytes_.data() + offset, n);
  }
  const unsigned char* data() const override { return reinterpret_cast<const unsigned char*>(bytes_.data()); }
  bool in_memory() const override { return true; }

 private:
  std::string bytes_;
  std::string name_;
};

class RangeSource final : public ByteSource {
 public:
  RangeSource(std::string name, uint64_t size, std::function<void(uint64_t, uint64_t, void*)> read)
      : name_(std::move(name)), size_(size), read_(std::move(read)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset) past_end(name_, offset, n, size_);
    if (n) read_(offset, n, dst);
  }

 private:
  std::string name_;
  uint64_t size_;
  std::function<void(uint64_t, uint64_t, void*)> read_;
};

}  // namespace

ByteSource::ByteSource() : id_(next_id.fetch_add(1)) {}

std::string ByteSource::read(uint64_t offset, uint64_t n) const {
  if (offset > size() || n > size() - offset) past_end(name(), offset, n, size());
  std::string out(n, '\0');
  read(offset, n, out.data());
  return out;
}


std::shared_ptr<const ByteSource> open_file_source(const std::string& path, const std::string& what, uint64_t max_bytes) {
  if (under_remote_prefix(path)) return open_remote_source(path, what, max_bytes);
  uint64_t size = 0;
  int fd = open_regular_file(path, what, max_bytes, &size);
  return std::make_shared<FileSource>(path, fd, size);
}

std::shared_ptr<const ByteSource> memory_source(std::string bytes, std::string name) {
  return std::make_shared<MemorySource>(std::move(bytes), std::move(name));
}

std::shared_ptr<const ByteSource> range_source(std::string name, uint64_t size,
                                               std::function<void(uint64_t, uint64_t, void*)> read) {
  return std::make_shared<RangeSource>(std::move(name), size, std::move(read));
}

std::vector<ByteRange> coalesce(std::vector<ByteRange> ranges, uint64_t gap) {
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!r.length) continue;
    if (!out.empty() && r.offset <= out.back().offset + out.back().length + gap) {
      out.back().length = std::max(out.back().offset + out.back().length, r.offset + r.length) - out.back().offset;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

uint64_t read_gap() { return env_bytes("MOTES_READ_GAP_KB", 10, kReadGap); }

}  // namespace motes
