// Remote stores (io/remote): a particle file read through a RemoteStore answers queries as
// the file does; a query asks for its ranges in few calls; the first read of a file also
// fetches its end; errors name the URL; the storage seam (io/storage) answers for a store
// without a round trip and refuses every write there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>

#include "motes/dataset/dataset.hpp"
#include "motes/io/files.hpp"
#include "motes/io/remote.hpp"
#include "motes/io/storage.hpp"
#include "motes/particles/writer.hpp"
#include "motes/query/engine.hpp"
#include "motes/query/selection.hpp"
#include "test_util.hpp"

using namespace motes;

namespace {

// Objects are the files of a local folder; every call is counted.
class FolderStore final : public RemoteStore {
 public:
  explicit FolderStore(std::string root) : root_(std::move(root)) {}
  uint64_t size(const std::string& key) const override {
    std::ifstream f(root_ + "/" + key, std::ios::binary | std::ios::ate);
    if (!f) throw NotFoundError(url(key) + ": no such object");
    return uint64_t(f.tellg());
  }
  void read(const std::string& key, const std::vector<ByteRange>& ranges, const std::vector<void*>& dst) const override {
    std::lock_guard lock(mutex_);
    ++calls;
    std::ifstream f(root_ + "/" + key, std::ios::binary);
    for (size_t i = 0; i < ranges.size(); ++i) {
      f.seekg(std::streamoff(ranges[i].offset));
      f.read(static_cast<char*>(dst[i]), std::streamsize(ranges[i].length));
      asked.push_back(ranges[i]);
    }
  }
  std::string url(const std::string& key) const override { return "test://" + key; }
  mutable int calls = 0;
  mutable std::vector<ByteRange> asked;

 private:
  std::string root_;
  mutable std::mutex mutex_;
};

std::vector<uint64_t> ids_of(const std::shared_ptr<const ParticleFile>& file, const QuerySpec& spec) {
  Query q(file, spec);
  Selection s(q);
  std::vector<uint64_t> out(s.size());
  s.gather(file->column("id"), 0, s.size(), out.data(), 1);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Remote, AFileReadThroughAStoreAnswersAsTheFileDoes) {
  test::Columns cols = test::make_columns(60000, 3);
  WriteOptions o;
  o.layout.leaf_size = 128;
  o.sync = false;
  const std::string path = test::temp_path("remote.mpf");
  write_particle_file(path, cols.views(), o);
  const std::string folder = path.substr(0, path.rfind('/')), name = path.substr(path.rfind('/') + 1);
  auto store = std::make_shared<FolderStore>(folder);
  register_remote_store("test-remote://", store);

  auto local = ParticleFile::open(path);
  auto remote = ParticleFile::open("test-remote://" + name);
  EXPECT_EQ(remote->particle_count(), local->particle_count());
  EXPECT_EQ(store->calls, 1);  // the header and the file's end, in one call
  ASSERT_EQ(store->asked.size(), 2u);
  EXPECT_EQ(store->asked[0].offset, 0u);
  EXPECT_EQ(store->asked[1].offset + store->asked[1].length, remote->source().size());

  for (const char* where : {"x < 0.3 and y > 0.5", "energy > 0.9", "id < 100"}) {
    QuerySpec spec;
    spec.where = where;
    const int before = store->calls;
    EXPECT_EQ(ids_of(remote, spec), ids_of(local, spec)) << where;
    EXPECT_LE(store->calls - before, 3) << where;  // the plan's ranges, asked at once per phase
  }
  QuerySpec box;
  box.box = Box{{0.2, 0.2, 0.2}, {0.4, 0.5, 0.6}};
  EXPECT_EQ(ids_of(remote, box), ids_of(local, box));

  try {
    ParticleFile::open("test-remote://no-such.mpf");
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("test://no-such.mpf"), std::string::npos);
  }
  unregister_remote_store("test-remote://");
  EXPECT_FALSE(under_remote_prefix("test-remote://" + name));
}

TEST(Remote, StorageInAStoreIsReadOnlyAndNotLookedAt) {
  const std::string dir = test::temp_path("remote-storage");
  auto store = std::make_shared<FolderStore>(dir);
  register_remote_store("test-store://", store);
  const std::string in = "test-store://run.motes";
  EXPECT_EQ(path_kind(in), PathKind::unknown);  // no call: a store is asked only by reading
  EXPECT_TRUE(path_exists(path_in(in, "manifest.json")));
  EXPECT_EQ(store->calls, 0);
  EXPECT_FALSE(remove_tree(in));
  for (auto refused : std::vector<std::function<void()>>{
           [&] { make_directory(in); }, [&] { entry_names(in); },
           [&] { write_file_atomic(path_in(in, "manifest.json"), "{}"); },
           [&] { FileLock::acquire(path_in(in, "lock"), "test", 0); }, [&] { Dataset::create(in, 0); }}) {
    try {
      refused();
      ADD_FAILURE() << "a write in a store was not refused";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("test://run.motes"), std::string::npos) << e.what();
    }
  }
  try {  // a missing dataset: NotFoundError naming its manifest's URL, from the one read
    Dataset::open(in);
    ADD_FAILURE();
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("test://run.motes/manifest.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store->calls, 0);  // size() answered NotFound before any read
  unregister_remote_store("test-store://");
  EXPECT_EQ(path_kind(in), PathKind::missing);
}
