// The error table (core/errors.hpp): every kind has its class, code and names, and a
// caught exception maps back to its kind.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <string>

#include "motes/core/errors.hpp"
#include "motes/io/files.hpp"

using namespace motes;

TEST(Errors, TableRowsAreUniqueAndComplete) {
  std::set<int> codes;
  std::set<std::string> names, classes, python;
  for (const ErrorKindInfo& k : error_kinds) {
    EXPECT_EQ(k.code, int(k.kind));
    EXPECT_GT(k.code, 0) << "0 is MOTES_OK";
    EXPECT_TRUE(codes.insert(k.code).second) << k.name;
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_TRUE(classes.insert(k.cpp_class).second) << k.name;
    EXPECT_TRUE(python.insert(k.python_class).second) << k.name;
    EXPECT_EQ(std::string(k.c_status).rfind("MOTES_ERROR_", 0), 0u) << k.name;
    EXPECT_GT(k.exit_code, 0) << k.name;
    EXPECT_NE(k.exit_code, 130) << "130 is Ctrl-C";
    EXPECT_GT(std::string(k.description).size(), 5u) << k.name;
    EXPECT_EQ(find_error_kind(k.code), &k);
    EXPECT_EQ(&info(k.kind), &k);
  }
  EXPECT_EQ(find_error_kind(0), nullptr);
  EXPECT_EQ(find_error_kind(99), nullptr);
  EXPECT_FALSE(python.count("MotesError")) << "the base class is no kind";
}

TEST(Errors, EveryKindThrowsItsClassAndIsDescribedBack) {
  for (const ErrorKindInfo& k : error_kinds) {
    try {
      throw_error(k.kind, "boom", 7);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), k.kind);
      EXPECT_STREQ(e.what(), "boom");
      EXPECT_EQ(e.error_number(), 7);
      ErrorReport r = describe_exception(std::current_exception());
      EXPECT_EQ(r, (ErrorReport{k.kind, 7, "boom"}));
    }
  }
}

TEST(Errors, ClassesCarryTheirKind) {
#define CHECK_CLASS(k, cls, ...)                         \
  {                                                      \
    cls e("m");                                          \
    const Error& base = e;                               \
    EXPECT_EQ(base.kind(), ErrorKind::k) << #cls;        \
    EXPECT_EQ(base.error_number(), 0) << #cls;           \
    EXPECT_STREQ(info(ErrorKind::k).cpp_class, #cls);    \
  }
  MOTES_ERROR_KINDS(CHECK_CLASS)
#undef CHECK_CLASS
  EXPECT_EQ(Error("plain").kind(), ErrorKind::internal);
}

TEST(Errors, ForeignExceptionsAreDescribedByTheTable) {
  auto describe = [](auto thrower) {
    try {
      thrower();
    } catch (...) {
      return describe_exception(std::current_exception());
    }
    return ErrorReport{};
  };
  ErrorReport r = describe([] { throw std::bad_alloc(); });
  EXPECT_EQ(r.kind, ErrorKind::memory);
  r = describe([] {
    throw std::filesystem::filesystem_error("stat", "/x", std::make_error_code(std::errc::permission_denied));
  });
  EXPECT_EQ(r.kind, ErrorKind::io);
  EXPECT_EQ(r.error_number, EACCES);
  r = describe([] { throw std::out_of_range("index 9"); });
  EXPECT_EQ(r.kind, ErrorKind::internal);
  EXPECT_EQ(r.message, "index 9");
  r = describe([] { throw 42; });
  EXPECT_EQ(r.kind, ErrorKind::internal);
}

TEST(Errors, SystemCallFailuresAreIoWithErrno) {
  try {
    errno = ENOSPC;
    throw_errno("write failed on", "/tmp/x");
  } catch (const IOError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(e.error_number(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("/tmp/x"), std::string::npos);
  }
  uint64_t size = 0;
  try {
    open_regular_file("/nonexistent/motes/file", "file", 1 << 20, &size);
    FAIL() << "no error";
  } catch (const NotFoundError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_EQ(e.error_number(), ENOENT);
  }
}

// The C API: every kind of the table is a status of motes.h, and guarded() maps each
// exception to it with its message.
#include "motes/capi/writer_state.hpp"

TEST(Errors, CApiStatusOfEveryKind) {
  // Every failure status of motes.h is a kind of the table, with the same value.
  const std::pair<motes_status, const char*> header[] = {
      {MOTES_ERROR_USAGE, "MOTES_ERROR_USAGE"},   {MOTES_ERROR_FORMAT, "MOTES_ERROR_FORMAT"},
      {MOTES_ERROR_IO, "MOTES_ERROR_IO"},         {MOTES_ERROR_MEMORY, "MOTES_ERROR_MEMORY"},
      {MOTES_ERROR_INTERNAL, "MOTES_ERROR_INTERNAL"}, {MOTES_ERROR_NOT_FOUND, "MOTES_ERROR_NOT_FOUND"},
      {MOTES_ERROR_CANCELLED, "MOTES_ERROR_CANCELLED"}, {MOTES_ERROR_REPLACED, "MOTES_ERROR_REPLACED"}};
  ASSERT_EQ(std::size(header), std::size(error_kinds));
  for (auto [status, name] : header) {
    const ErrorKindInfo* k = find_error_kind(int(status));
    ASSERT_NE(k, nullptr) << name;
    EXPECT_STREQ(k->c_status, name);
  }
  for (const ErrorKindInfo& k : error_kinds) {
    motes_status s = guarded([&]() -> motes_status { throw_error(k.kind, "it failed"); });
    EXPECT_EQ(int(s), k.code) << k.name;
    std::string expected = k.kind == ErrorKind::internal ? "internal error: it failed" : "it failed";
    EXPECT_EQ(std::string(motes_last_error()), expected) << k.name;
  }
  EXPECT_EQ(guarded([] { return MOTES_OK; }), MOTES_OK);
  EXPECT_STREQ(motes_last_error(), "");
}

TEST(Errors, CApiStatusOfForeignExceptions) {
  EXPECT_EQ(guarded([]() -> motes_status { throw std::bad_alloc(); }), MOTES_ERROR_MEMORY);
  EXPECT_STREQ(motes_last_error(), "out of memory");
  EXPECT_EQ(guarded([]() -> motes_status {
              throw std::filesystem::filesystem_error("rename", std::make_error_code(std::errc::no_space_on_device));
            }),
            MOTES_ERROR_IO);
  EXPECT_EQ(guarded([]() -> motes_status { throw std::logic_error("oops"); }), MOTES_ERROR_INTERNAL);
  EXPECT_STREQ(motes_last_error(), "internal error: oops");
  EXPECT_EQ(guarded([]() -> motes_status { throw 1; }), MOTES_ERROR_INTERNAL);
  // A dataset below a regular file: the system call fails (ENOTDIR), an I/O error.
  const std::string file = (std::filesystem::temp_directory_path() / "motes-test-errors-file").string();
  { std::ofstream(file) << "x"; }
  motes_writer* w = nullptr;
  EXPECT_EQ(motes_writer_open((file + "/run.motes").c_str(), &w), MOTES_ERROR_IO) << motes_last_error();
  EXPECT_EQ(w, nullptr);
  std::filesystem::remove(file);
}
