// A dataset's directory on local storage: what exists there, what a directory holds,
// directories made and removed, a file's size. The dataset and parallel layers ask these
// here instead of calling the file system themselves (io/ makes every system call on a
// file). A path under a registered remote prefix (io/remote.hpp) is read through its store
// and never reaches these: remote datasets are read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace motes {

// `dir`/`name` (a path under a directory).
std::string path_in(const std::string& dir, const std::string& name);
// The directory holding `path` (of its absolute form: a relative path's parent too).
std::string parent_of(const std::string& path);

enum class PathKind { missing, file, directory };
// What lies at `path`: missing too when it cannot be looked at (no permission, a component
// that is a file).
PathKind path_kind(const std::string& path);
inline bool path_exists(const std::string& path) { return path_kind(path) != PathKind::missing; }

// The names of the entries of directory `dir` (not . and ..); IOError naming it when it
// cannot be read.
std::vector<std::string> entry_names(const std::string& dir);

// Makes directory `dir`, and its parents when they are missing; true when this call made
// `dir` itself, false when it existed (as anything: the caller checks it is a directory).
// IOError naming it when it cannot be made.
bool make_directory(const std::string& dir);

// Removes `path` and everything under it; false when something could not be removed.
bool remove_tree(const std::string& path) noexcept;

// The size of file `path`; IOError naming it when it cannot be looked at.
uint64_t file_size(const std::string& path);

}  // namespace motes
