// io/storage.hpp: the questions and changes about a dataset's directory that the dataset and
// parallel layers ask of io/ instead of the file system: what lies at a path, a directory's
// entries, directories made (with their parents) and removed, a file's size; errors name
// the path.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "motes/core/errors.hpp"
#include "motes/io/storage.hpp"
#include "test_util.hpp"

namespace motes {
namespace {

TEST(Directories, WhatLiesAtAPathAndWhatADirectoryHolds) {
  const std::string root = test::temp_path("storage-root");
  std::filesystem::remove_all(root);
  EXPECT_EQ(path_kind(root), PathKind::missing);
  EXPECT_TRUE(make_directory(path_in(root, "a/b")));  // its parents too
  EXPECT_FALSE(make_directory(path_in(root, "a/b")));  // there already
  EXPECT_EQ(path_kind(path_in(root, "a")), PathKind::directory);
  std::ofstream(path_in(root, "a/f.txt")) << "12345";
  EXPECT_EQ(path_kind(path_in(root, "a/f.txt")), PathKind::file);
  EXPECT_EQ(path_kind(path_in(root, "a/f.txt/x")), PathKind::missing);  // below a file
  EXPECT_EQ(file_size(path_in(root, "a/f.txt")), 5u);
  std::vector<std::string> names = entry_names(path_in(root, "a"));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"b", "f.txt"}));
  EXPECT_EQ(parent_of(path_in(root, "a/f.txt")), std::filesystem::absolute(path_in(root, "a")).string());
  EXPECT_FALSE(make_directory(path_in(root, "a/f.txt")));  // exists, as a file: the caller checks
  EXPECT_TRUE(remove_tree(path_in(root, "a")));
  EXPECT_FALSE(path_exists(path_in(root, "a")));
  EXPECT_TRUE(remove_tree(path_in(root, "a")));  // nothing there: nothing to remove
  std::filesystem::remove_all(root);
}

TEST(Directories, ErrorsNameThePath) {
  const std::string missing = test::temp_path("storage-missing/none");
  std::filesystem::remove_all(test::temp_path("storage-missing"));
  try {
    file_size(missing);
    FAIL() << "no error";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(entry_names(missing), IOError);
  std::ofstream(test::temp_path("storage-file")) << "x";
  EXPECT_THROW(make_directory(test::temp_path("storage-file") + "/below"), IOError);  // a file is in the way
}

}  // namespace
}  // namespace motes
