// docs/configs.md must list exactly the declared keys: it is the registry's markdown().
// With DEPBLOOM_UPDATE_DOCS=1 the test rewrites the file instead of comparing. The other
// docs may only name keys the CLI accepts, and docs/data.md documents every data.* key.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
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

std::string read_doc(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << "missing " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The config keys a text names in backquotes, `data.columns.{src,dst}` expanded; a
// trailing dot (`data.columns.<name>`) leaves the section.
std::set<std::string> documented_keys(const std::string& text, const OptionRegistry& r) {
  std::set<std::string> sections;
  for (const auto& s : r.specs()) sections.insert(s.key.substr(0, s.key.find('.')));
  static const std::regex token(R"(`([a-z_]+)\.([A-Za-z0-9_.]*)(\{([a-z_,]+)\})?)");
  std::set<std::string> keys;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), token);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (sections.count(m[1]) == 0) continue;
    std::string base = m[1].str() + "." + m[2].str();
    std::vector<std::string> names;
    std::stringstream alternatives(m[4].str());
    for (std::string name; std::getline(alternatives, name, ',');) names.push_back(name);
    if (names.empty()) names.push_back("");
    for (const std::string& name : names) {
      std::string key = base + name;
      while (!key.empty() && key.back() == '.') key.pop_back();
      keys.insert(key);
    }
  }
  return keys;
}

TEST(ConfigDocs, DocsNameOnlyKeysTheCliAccepts) {
  const OptionRegistry r = depbloom_options();
  const std::filesystem::path source = DEPBLOOM_SOURCE_DIR;
  std::vector<std::filesystem::path> pages = {source / "README.md"};
  for (const auto& entry : std::filesystem::directory_iterator(source / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  for (const auto& page : pages) {
    for (const std::string& key : documented_keys(read_doc(page.string()), r)) {
      const bool section = std::any_of(r.specs().begin(), r.specs().end(), [&](const auto& s) {
        return s.key.rfind(key + ".", 0) == 0;
      });
      EXPECT_TRUE(r.has(key) || section)
          << page.filename() << " names `" << key << "`, which depbloom-train does not accept";
    }
  }
}

TEST(ConfigDocs, DataMdDocumentsEveryDataKey) {
  const OptionRegistry r = depbloom_options();
  const std::string page = read_doc(std::string(DEPBLOOM_SOURCE_DIR) + "/docs/data.md");
  const std::string table = page.substr(0, page.find("## Formats"));
  const std::set<std::string> documented = documented_keys(table, r);
  for (const auto& s : r.specs()) {
    if (s.key.rfind("data.", 0) == 0) {
      EXPECT_EQ(documented.count(s.key), 1u) << s.key << " is missing from docs/data.md's table";
    }
  }
}

}  // namespace
}  // namespace depbloom::cli
