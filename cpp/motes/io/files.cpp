#include "motes/io/files.hpp"

#include "motes/io/remote.hpp"
#include "motes/io/storage.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "motes/core/types.hpp"

namespace motes {

void throw_errno(const std::string& what, const std::string& path) {
  int e = errno;
  throw IOError(what + " '" + path + "': " + std::strerror(e), e);
}

namespace {
std::string temp_name_for(const std::string& final_path) {
  static std::atomic<uint64_t> counter{0};
  return final_path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}
}  // namespace

AtomicFile::AtomicFile(std::string final_path, bool sync) : final_(std::move(final_path)), sync_(sync) {
  check_writable(final_, "write");
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

void check_path(const std::string& path) {
  if (path.empty()) throw UsageError("the path is empty");
  if (path.find('\0') != std::string::npos)
    throw UsageError("the path '" + path.substr(0, path.find('\0')) + "\\0...' holds a NUL byte");
}

namespace {
const char* file_type_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}
}  // namespace

int open_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes, uint64_t* size) {
  check_path(path);
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) throw NotFoundError("no such " + what + ": '" + path + "'", ENOENT);
    throw_errno("cannot open " + what, path);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    throw_errno("cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError(path + ": the " + what + " is " + file_type_name(st.st_mode) + ", not a regular file");
  }
  if (uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw FormatError(path + ": the " + what + " is " + std::to_string(st.st_size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " a " + what + " can be");
  }
  *size = uint64_t(st.st_size);
  return fd;
}

std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  if (under_remote_prefix(path)) {  // an object of a remote store, whole
    auto source = open_remote_source(path, what, max_bytes);
    return source->read(0, source->size());
  }
  uint64_t size = 0;
  int fd = open_regular_file(path, what, max_bytes, &size);
  std::string out(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    ssize_t r = ::pread(fd, out.data() + done, size - done, off_t(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = r < 0 ? errno : 0;
      ::close(fd);
      if (e) errno = e, throw_errno("cannot read", path);
      throw FormatError(path + ": the " + what + " shrank while being read (" + std::to_string(done) + " of " +
                        std::to_string(size) + " bytes)");
    }
    done += uint64_t(r);
  }
  ::close(fd);
  return out;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

FileLock FileLock::acquire(const std::string& path, const std::string& what, double timeout_seconds) {
  check_path(path);
  check_writable(path, "lock");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("cannot open the lock file", path);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_seconds));
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      int e = errno;
      ::close(fd);
      errno = e;
      throw_errno("cannot lock", path);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      char holder[512] = {0};
      ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
      ::close(fd);
      std::string who = n > 0 ? std::string(holder, size_t(n)) : std::string();
      while (!who.empty() && (who.back() == '\n' || who.back() == '\0')) who.pop_back();
      throw UsageError("cannot " + what + ": another writer holds the lock '" + path + "'" +
                       (who.empty() ? std::string() : " (" + who + ")") +
                       "; motes allows one writer per dataset at a time: wait for it to finish" +
                       (timeout_seconds > 0 ? " (waited " + number_text(timeout_seconds) + " s)" : std::string()) +
                       " or pass a lock timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Who holds it, for the message of a writer that is refused; advisory only.
  char host[256] = {0}, when[32] = {0};
  ::gethostname(host, sizeof host - 1);
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);  // digits only: locale-independent
  std::string who = "pid " + std::to_string(::getpid()) + " on " + host + " since " + when + ": " + what + "\n";
  if (::ftruncate(fd, 0) == 0) {
    ssize_t ignored = ::pwrite(fd, who.data(), who.size(), 0);
    (void)ignored;
  }
  return FileLock(fd);
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
