// docs/configs.md must list exactly the declared keys: it is the registry's markdown().
// With DEPBLOOM_UPDATE_DOCS=1 the test rewrites the file instead of comparing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "depbloom/cli/options.h"

namespace depbloom::cli {
namespace {

TEST(ConfigDocs, DocsConfigsMdIsUpToDate) {
  std::string path = std::string(DEPBLOOM_SOURCE_DIR) + "/docs/configs.md";
  std::string expected = depbloom_options().markdown();
  const char* update = std::getenv("DEPBLOOM_UPDATE_DOCS");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << expected;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << "missing " << path
                 << "; generate it with DEPBLOOM_UPDATE_DOCS=1 test_cli --gtest_filter='*Docs*'";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), expected)
      << path << " is out of date with src/cli/config_schema.cpp; regenerate it with "
      << "DEPBLOOM_UPDATE_DOCS=1 test_cli --gtest_filter='*Docs*'";
}

TEST(ConfigDocs, EveryKeyIsInTheTable) {
  OptionRegistry r = depbloom_options();
  std::string md = r.markdown();
  for (const auto& s : r.specs()) EXPECT_NE(md.find("| `" + s.key + "` |"), std::string::npos);
}

}  // namespace
}  // namespace depbloom::cli
