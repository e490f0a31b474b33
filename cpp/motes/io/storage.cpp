#include "motes/io/storage.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "motes/io/files.hpp"

namespace motes {

namespace fs = std::filesystem;

std::string path_in(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string parent_of(const std::string& path) { return fs::absolute(path).parent_path().string(); }

PathKind path_kind(const std::string& path) {
  std::error_code ec;
  const fs::file_status s = fs::status(path, ec);
  if (ec || !fs::exists(s)) return PathKind::missing;
  return fs::is_directory(s) ? PathKind::directory : PathKind::file;
}

std::vector<std::string> entry_names(const std::string& dir) {
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
  std::error_code ec;
  fs::remove_all(path, ec);
  return !ec;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("cannot look at file", path);
  return uint64_t(st.st_size);
}

}  // namespace motes
