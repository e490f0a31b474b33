#include "motes/format/io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "motes/types.hpp"

namespace motes {

void throw_errno(const std::string& what, const std::string& path) {
  int e = errno;
  throw Error(what + " '" + path + "': " + std::strerror(e));
}

namespace {
std::string temp_name_for(const std::string& final_path) {
  static std::atomic<uint64_t> counter{0};
  return final_path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}
}  // namespace

AtomicFile::AtomicFile(std::string final_path, bool sync) : final_(std::move(final_path)), sync_(sync) {
  temp_ = temp_name_for(final_);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_errno("cannot create", temp_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::pwrite_all(const void* data, size_t n, uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd_, p, n, off_t(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw_errno("write failed on", temp_);
    }
    if (w == 0) {
      errno = ENOSPC;
      throw_errno("short write on", temp_);
    }
    p += w;
    n -= size_t(w);
    offset += uint64_t(w);
  }
}

void AtomicFile::start_writeback(uint64_t offset, uint64_t n) {
#ifdef __linux__
  if (sync_) ::sync_file_range(fd_, off_t(offset), off_t(n), SYNC_FILE_RANGE_WRITE);  // advisory: errors surface in commit()
#else
  (void)offset, (void)n;
#endif
}

void AtomicFile::commit() {
  if (sync_ && ::fdatasync(fd_) != 0) throw_errno("cannot sync", temp_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_.c_str());
    throw_errno("cannot close", temp_);
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    int e = errno;
    ::unlink(temp_.c_str());
    errno = e;
    throw_errno("cannot rename onto", final_);
  }
  if (sync_) sync_directory(std::filesystem::path(final_).parent_path().string());
}

void write_file_atomic(const std::string& path, const std::string& contents, bool sync) {
  AtomicFile f(path, sync);
  f.pwrite_all(contents.data(), contents.size(), 0);
  f.commit();
}

void sync_directory(const std::string& dir) {
  std::string d = dir.empty() ? "." : dir;
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open directory", d);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw_errno("cannot sync directory", d);
}

}  // namespace motes
