// Where a dataset lives: what exists there, what a directory holds, directories made and
// removed, a file's size. The dataset and parallel layers ask these here instead of calling
// the file system themselves (io/ makes every system call on a file and alone knows of
// remote stores).
//
// A path under a registered remote prefix (io/remote.hpp: an object store, a web server) is
// in a store, which is read-only and asked only by reading: its kind is `unknown` (not
// looked at, so opening a dataset there costs no round trip; the read that follows names
// the missing object by its URL), its size is the object's, and making, listing, removing,
// writing or locking there is a UsageError naming the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace motes {

// `dir`/`name` (a path under a directory).
std::string path_in(const std::string& dir, const std::string& name);
// The directory holding `path` (of its absolute form: a relative path's parent too).
std::string parent_of(const std::string& path);

enum class PathKind { missing, file, directory, unknown };
// What lies at `path`: missing too when it cannot be looked at (no permission, a component
// that is a file); unknown in a remote store.
PathKind path_kind(const std::string& path);
// Whether `path` may be read: true in a remote store too (a read there says what is missing).
inline bool path_exists(const std::string& path) { return path_kind(path) != PathKind::missing; }

// UsageError when `path` is in a remote store, which motes only reads: `doing` says what was
// refused ("create directory").
void check_writable(const std::string& path, const char* doing);

// The names of the entries of directory `dir` (not . and ..); IOError naming it when it
// cannot be read.
std::vector<std::string> entry_names(const std::string& dir);

// Makes directory `dir`, and its parents when they are missing; true when this call made
// `dir` itself, false when it existed (as anything: the caller checks it is a directory).
// IOError naming it when it cannot be made.
bool make_directory(const std::string& dir);

// Removes `path` and everything under it; false when something could not be removed (and
// in a remote store, which is not touched).
bool remove_tree(const std::string& path) noexcept;

// The size of file `path` (of the object, in a remote store); IOError naming it when it
// cannot be looked at (NotFoundError naming its URL in a store).
uint64_t file_size(const std::string& path);

}  // namespace motes
