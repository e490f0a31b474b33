// POSIX file helpers: full writes, durable atomic replacement of a file.
#pragma once

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

void sync_directory(const std::string& dir);

// Throws Error with the path and strerror(errno).
[[noreturn]] void throw_errno(const std::string& what, const std::string& path);

}  // namespace motes
