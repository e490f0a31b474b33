// POSIX file helpers: full writes, durable atomic replacement of a file.
#pragma once

#include <cstdint>
#include <string>

namespace motes {

// A file being written under a temporary name next to its final path. commit()
// syncs it, renames it over the final path and syncs the directory; if the
// object dies uncommitted (an exception, a failed write) the temporary is removed,
// so the final path keeps whatever it held before.
class AtomicFile {
 public:
  explicit AtomicFile(std::string final_path, bool sync = true);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void pwrite_all(const void* data, size_t n, uint64_t offset);
  // Asks the kernel to start writing [offset, offset + n) to disk now (when syncing), so the
  // device works while the caller computes the next block and commit() waits less.
  void start_writeback(uint64_t offset, uint64_t n);
  void commit();
  const std::string& temp_path() const { return temp_; }

 private:
  std::string final_, temp_;
  int fd_ = -1;
  bool sync_;
};

// Writes a small file atomically (used for manifests).
void write_file_atomic(const std::string& path, const std::string& contents, bool sync = true);

// UsageError for a path that cannot name a file: empty, or holding a NUL byte (which the
// operating system would silently cut the path at).
void check_path(const std::string& path);

// Opens `path` for reading and checks that it is a regular file (not a FIFO, a device such
// as /dev/zero, or a directory) of at most max_bytes, without blocking on a FIFO. Returns
// the descriptor and sets *size. FormatError naming `what` and the file otherwise.
int open_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes, uint64_t* size);

// The whole of a small regular file (manifests, step indexes), read with pread after the
// checks of open_regular_file.
std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes);

// An exclusive advisory lock (flock) on a file, held while the object lives; released by
// the kernel when the process dies, so a crash never leaves a stale lock. Handles in one
// process exclude each other like separate processes. The file names the holder (pid,
// host, what it is doing), so a writer refused the lock can say who holds it.
class FileLock {
 public:
  // Waits up to timeout_seconds (0: does not wait) for the lock; UsageError naming the
  // holder when it stays taken.
  static FileLock acquire(const std::string& path, const std::string& what, double timeout_seconds);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

void sync_directory(const std::string& dir);

// Throws IOError with the path, strerror(errno) and errno.
[[noreturn]] void throw_errno(const std::string& what, const std::string& path);

}  // namespace motes
