// Unit tests of the error type and macros: DB_ASSERT / DB_THROW record file, line, the
// failing expression and the formatted message; exit_code maps kinds to 2, 3 and 4.
#include <gtest/gtest.h>

#include <string>

#include "depbloom/core/error.h"

namespace depbloom {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Error, AssertRecordsFileLineExpressionAndMessage) {
  const int expected_line = __LINE__ + 2;
  try {
    DB_ASSERT(1 + 1 == 3, "arithmetic is off by {}", 1);
    FAIL() << "DB_ASSERT did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_EQ(e.message(), "arithmetic is off by 1");
    EXPECT_EQ(e.line(), expected_line);
    ASSERT_NE(e.file(), nullptr);
    EXPECT_TRUE(contains(e.file(), "test_error.cpp")) << e.file();
    ASSERT_NE(e.expression(), nullptr);
    EXPECT_TRUE(contains(e.expression(), "1 + 1 == 3")) << e.expression();
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "arithmetic is off by 1")) << what;
    EXPECT_TRUE(contains(what, "1 + 1 == 3")) << what;
    EXPECT_TRUE(contains(what, "test_error.cpp:" + std::to_string(expected_line))) << what;
  }
}

TEST(Error, AssertPassesSilentlyAndEvaluatesOnce) {
  int calls = 0;
  auto check = [&] { return ++calls > 0; };
  EXPECT_NO_THROW(DB_ASSERT(check(), "never shown {}", calls));
  EXPECT_EQ(calls, 1);
}

TEST(Error, ThrowCarriesKindAndLocation) {
  const int line = __LINE__ + 2;
  try {
    DB_THROW(data, "bad row {} in {}", 17, "events.csv");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_EQ(e.message(), "bad row 17 in events.csv");
    EXPECT_EQ(e.line(), line);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "bad row 17 in events.csv")) << what;
    EXPECT_TRUE(contains(what, "test_error.cpp:" + std::to_string(line))) << what;
  }
  EXPECT_THROW(DB_THROW(config, "unknown key {}", "x"), Error);
  try {
    DB_THROW(usage, "no such flag");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
}

TEST(Error, IsAStdRuntimeError) {
  try {
    DB_THROW(runtime, "boom");
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "boom"));
  }
}

TEST(Error, ExitCodes) {
  EXPECT_EQ(exit_code(ErrorKind::usage), 2);
  EXPECT_EQ(exit_code(ErrorKind::config), 2);
  EXPECT_EQ(exit_code(ErrorKind::data), 3);
  EXPECT_EQ(exit_code(ErrorKind::runtime), 4);
}

TEST(Error, DirectConstructionWithoutLocation) {
  Error e(ErrorKind::config, "plain");
  EXPECT_EQ(std::string(e.what()), "plain");
  EXPECT_EQ(e.file(), nullptr);
  EXPECT_EQ(e.expression(), nullptr);
}

}  // namespace
}  // namespace depbloom
