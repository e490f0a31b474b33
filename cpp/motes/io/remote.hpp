// Datasets in object stores and on web servers: a process registers a RemoteStore under a
// path prefix (such as "remote://1/"), and every path under it is then read through the
// store, by its key (the rest of the path), in byte ranges: open_file_source gives a
// RemoteSource and read_regular_file reads the object whole. Nothing else of the core knows.
//
// A RemoteSource asks for what the planner will read (will_need: the plan's exact ranges,
// coalesced across gaps of remote_read_gap(), in one call of the store, which issues them in
// parallel) and keeps the bytes it fetched, in blocks of kRemoteBlock, within a budget; a
// read outside them fetches the blocks it covers (headers and directories are read so).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "motes/io/byte_source.hpp"

namespace motes {

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // The object's size; NotFoundError naming it when absent.
  virtual uint64_t size(const std::string& key) const = 0;
  // Fills dst[i] with the bytes of ranges[i] of the object (each exactly; requests in parallel).
  virtual void read(const std::string& key, const std::vector<ByteRange>& ranges,
                    const std::vector<void*>& dst) const = 0;
  // What names an object in messages (its URL).
  virtual std::string url(const std::string& key) const = 0;
};

// Bytes a remote read fetches at least (a miss reads the aligned blocks it covers), and the
// bytes a RemoteSource keeps.
inline constexpr uint64_t kRemoteBlock = uint64_t(512) << 10;
// The gap a remote read plan reads through (where a request costs a round trip, not a seek):
// measured by bench/remote_read.py's box at 20 ms; MOTES_REMOTE_READ_GAP_KB overrides it.
inline constexpr uint64_t kRemoteReadGap = uint64_t(256) << 10;
uint64_t remote_read_gap();
inline constexpr uint64_t kRemoteKeep = uint64_t(256) << 20;

// Registers `store` for the paths that begin with `prefix` (replacing one registered there).
void register_remote_store(const std::string& prefix, std::shared_ptr<const RemoteStore> store);
void unregister_remote_store(const std::string& prefix);
// The store of a path under a registered prefix, and the path's key; nullptr otherwise.
std::shared_ptr<const RemoteStore> remote_store_of(const std::string& path, std::string* key);
// Whether `path` lies under a registered prefix (read through a store). Not the Python
// motes.remote.is_remote, which tells a URL by its scheme before any store is registered.
inline bool under_remote_prefix(const std::string& path) { return remote_store_of(path, nullptr) != nullptr; }
// A remote object as a ByteSource, of at most max_bytes (FormatError naming `what` beyond).
std::shared_ptr<const ByteSource> open_remote_source(const std::string& path, const std::string& what,
                                                     uint64_t max_bytes = UINT64_MAX);

// Requests and bytes asked of every store since the process started (what a test or a
// benchmark counts).
struct RemoteCounters {
  uint64_t calls = 0, ranges = 0, bytes = 0;
};
RemoteCounters remote_counters();

}  // namespace motes
