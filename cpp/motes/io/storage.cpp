#include "motes/io/storage.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "motes/core/errors.hpp"
#include "motes/io/files.hpp"
#include "motes/io/remote.hpp"

namespace motes {

namespace fs = std::filesystem;

std::string path_in(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string parent_of(const std::string& path) { return fs::absolute(path).parent_path().string(); }

PathKind path_kind(const std::string& path) {
  if (under_remote_prefix(path)) return PathKind::unknown;
  std::error_code ec;
  const fs::file_status s = fs::status(path, ec);
  if (ec || !fs::exists(s)) return PathKind::missing;
  return fs::is_directory(s) ? PathKind::directory : PathKind::file;
}

void check_writable(const std::string& path, const char* doing) {
  std::string key;
  if (auto store = remote_store_of(path, &key))
    throw UsageError(std::string("cannot ") + doing + " '" + store->url(key) +
                     "': datasets in object stores and on web servers are read-only (write one locally and upload it)");
}

std::vector<std::string> entry_names(const std::string& dir) {
  check_writable(dir, "list directory");  // a store is not listed: what it holds is in its manifests
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path().filename().string());
  if (ec) {
    errno = ec.value();
    throw_errno("cannot list directory", dir);
  }
  return out;
}

bool make_directory(const std::string& dir) {
  check_writable(dir, "create directory");
  if (::mkdir(dir.c_str(), 0777) == 0) return true;
  if (errno == EEXIST) return false;
  if (errno != ENOENT) throw_errno("cannot create directory", dir);
  std::error_code ec;
  fs::create_directories(fs::path(dir).parent_path(), ec);  // parents, then the directory itself
  if (ec) {
    errno = ec.value();
    throw_errno("cannot create directory", fs::path(dir).parent_path().string());
  }
  if (::mkdir(dir.c_str(), 0777) == 0) return true;
  if (errno == EEXIST) return false;
  throw_errno("cannot create directory", dir);
}

bool remove_tree(const std::string& path) noexcept {
  if (under_remote_prefix(path)) return false;
  std::error_code ec;
  fs::remove_all(path, ec);
  return !ec;
}

uint64_t file_size(const std::string& path) {
  std::string key;
  if (auto store = remote_store_of(path, &key)) return store->size(key);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("cannot look at file", path);
  return uint64_t(st.st_size);
}

}  // namespace motes
