// Every text format loads its fixture to the same EventStream, whatever the line endings,
// blank lines, final newline, ties, self-loops and time order; plus id remapping,
// bipartite detection, feature files and summary statistics.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "data/format_table.h"
#include "data_test_util.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/npy.h"

namespace depbloom::data::testing {
namespace {

LoadOptions no_cache() {
  LoadOptions o;
  o.use_cache = false;
  return o;
}

LoadOptions csv_options() {
  LoadOptions o = no_cache();
  o.format = "csv";
  o.columns.time = 0;
  o.columns.src = 1;
  o.columns.dst = 2;
  o.columns.delimiter = ';';
  return o;
}

struct FormatFixture {
  const char* format;
  const char* file;  // under tests/fixtures/data
};

const FormatFixture kSingleSpace[] = {{"snap", "snap/tiny.txt"},
                                      {"konect", "konect/out.tiny"},
                                      {"tgn", "tgn/ml_tiny.csv"},
                                      {"tgl", "tgl/edges.csv"},
                                      {"csv", "csv/tiny.csv"}};

TEST(DataFormats, FixtureFilesLoadToTheReferenceStream) {
  for (const auto& f : kSingleSpace) {
    SCOPED_TRACE(f.file);
    const std::string path = kFixtures + "/" + f.file;
    LoadOptions o = std::string(f.format) == "csv" ? csv_options() : no_cache();
    expect_reference_stream(load_events(path, o));
    if (std::string(f.format) != "csv") {
      EXPECT_EQ(detect_format(path).format, f.format);
    }
  }
  EventStream jodie = load_events(kFixtures + "/jodie/tiny_jodie.csv", no_cache());
  expect_jodie_stream(jodie);
  EXPECT_EQ(detect_format(kFixtures + "/jodie/tiny_jodie.csv").format, "jodie");
}

TEST(DataFormats, FoldersResolveToTheirEventsFile) {
  EXPECT_EQ(detect_format(kFixtures + "/tgn").format, "tgn");
  EXPECT_EQ(detect_format(kFixtures + "/tgl").format, "tgl");
  EXPECT_EQ(detect_format(kFixtures + "/konect").format, "konect");
  EventStream s = load_events(kFixtures + "/tgn", no_cache());
  EXPECT_EQ(s.name, "tiny");
  expect_reference_stream(s);
}

// Variants of a text that every loader must read identically.
std::string crlf(const std::string& t) {
  std::string out;
  for (char c : t) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}
std::string no_final_newline(std::string t) {
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  return t;
}
std::string blank_lines(const std::string& t) {
  std::string out = "\n \t\n";
  for (char c : t) out += c == '\n' ? std::string("\n\n  \n") : std::string(1, c);
  return out;
}

TEST(DataFormats, LineEndingsBlankLinesAndFinalNewlineDoNotMatter) {
  for (const auto& f : kSingleSpace) {
    const std::string text = read_text(kFixtures + "/" + f.file);
    LoadOptions o = std::string(f.format) == "csv" ? csv_options() : no_cache();
    const std::string variants[] = {text,
                                    crlf(text),
                                    no_final_newline(text),
                                    blank_lines(text),
                                    no_final_newline(crlf(blank_lines(text))),
                                    "\xEF\xBB\xBF" + text};
    int k = 0;
    for (const std::string& v : variants) {
      SCOPED_TRACE(std::string(f.format) + " variant " + std::to_string(k++));
      expect_reference_stream(parse_event_text(v, f.format, "fixture", o));
    }
  }
  const std::string jodie = read_text(kFixtures + "/jodie/tiny_jodie.csv");
  expect_jodie_stream(parse_event_text(no_final_newline(jodie), "jodie", "j", no_cache()));
  expect_jodie_stream(parse_event_text(blank_lines(jodie), "jodie", "j", no_cache()));
}

TEST(DataFormats, OutOfOrderEventsAreSortedStablyWithAWarning) {
  LogCapture log;
  EventStream s = parse_event_text(read_text(kFixtures + "/snap/tiny.txt"), "snap", "tiny.txt");
  expect_reference_stream(s);
  EXPECT_TRUE(log.contains("tiny.txt: 1 of 6 events were out of time order")) << log.text();
  // Ties keep file order: rows 0 and 1 share t=10, rows 4 and 5 share t=20.
  EXPECT_EQ(s.event_id[0], 0);
  EXPECT_EQ(s.event_id[5], 5);
}

TEST(DataFormats, SelfLoopsAreKeptUnlessDropped) {
  const std::string text = read_text(kFixtures + "/snap/tiny.txt");
  EventStream kept = parse_event_text(text, "snap", "t");
  EXPECT_EQ(summarize(kept).self_loops, 1);
  LoadOptions o;
  o.drop_self_loops = true;
  EventStream dropped = parse_event_text(text, "snap", "t", o);
  EXPECT_EQ(dropped.num_events(), 5);
  EXPECT_EQ(summarize(dropped).self_loops, 0);
  EXPECT_EQ(dropped.event_id, (std::vector<int64_t>{0, 1, 3, 4, 5}));
}

TEST(DataFormats, TgnTripleAttachesEdgeAndNodeFeatures) {
  EventStream s = load_events(kFixtures + "/tgn/ml_tiny.csv", no_cache());
  // Row idx of ml_tiny.npy is (idx, 10 idx); idx = file row + 1, events sorted as 0 1 3 2 4 5.
  ASSERT_EQ(s.edge_dim, 2);
  EXPECT_EQ(s.edge_feat, (std::vector<float>{1, 10, 2, 20, 4, 40, 3, 30, 5, 50, 6, 60}));
  // Node row v of ml_tiny_node.npy is (v, v + .5, -v), looked up by original id 1 2 3 5.
  ASSERT_EQ(s.node_dim, 3);
  EXPECT_EQ(s.node_feat, (std::vector<float>{1, 1.5f, -1, 2, 2.5f, -2, 3, 3.5f, -3, 5, 5.5f, -5}));
  EXPECT_EQ(s.label, (std::vector<int32_t>{0, 1, 0, 0, 0, 0}));
}

TEST(DataFormats, TglEdgesCsvReadsExtRollAndFeatureFiles) {
  EventStream s = load_events(kFixtures + "/tgl", no_cache());
  EXPECT_EQ(s.split, (std::vector<int8_t>{0, 0, 0, 1, 2, 2}));
  ASSERT_EQ(s.edge_dim, 2);
  EXPECT_EQ(s.edge_feat, (std::vector<float>{0, 0, 1, -1, 3, -3, 2, -2, 4, -4, 5, -5}));
  EXPECT_EQ(s.name, "tgl");
}

TEST(DataFormats, KonectWeightBecomesAnEdgeFeature) {
  EventStream s = load_events(kFixtures + "/konect/out.tiny", no_cache());
  ASSERT_EQ(s.edge_dim, 1);
  EXPECT_EQ(s.edge_feat, (std::vector<float>{1, 2, 4, 1, 1, 3}));
  LoadOptions o = no_cache();
  o.weight_as_feature = false;
  EXPECT_EQ(load_events(kFixtures + "/konect/out.tiny", o).edge_dim, 0);
  // Three columns are src dst time.
  expect_reference_stream(
      parse_event_text("1 2 10\n2 3 10\n3 3 15\n5 1 12\n2 5 20\n1 3 20\n", "konect", "three"));
}

TEST(DataFormats, OffsetItemIdsRemapPerIdSpace) {
  // Items already offset past the users (as in the shipped WIKI file) stay 3 nodes apart.
  EventStream s = parse_event_text("u,i,ts,label\n0,3,1,0\n1,4,2,0\n2,3,3,0\n", "jodie", "w");
  EXPECT_EQ(s.num_nodes, 5);
  EXPECT_EQ(s.num_users, 3);
  EXPECT_EQ(s.dst, (std::vector<int32_t>{3, 4, 3}));
  EXPECT_EQ(s.original_id, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(DataFormats, DisjointSourcesAndDestinationsAreBipartite) {
  EventStream s = parse_event_text("7 10 5\n2 11 6\n7 11 7\n", "snap", "b");
  EXPECT_TRUE(s.bipartite);
  EXPECT_EQ(s.num_users, 2);
  EXPECT_EQ(s.src, (std::vector<int32_t>{1, 0, 1}));
  EXPECT_EQ(s.dst, (std::vector<int32_t>{2, 3, 3}));
  EXPECT_EQ(s.original_id, (std::vector<int64_t>{2, 7, 10, 11}));
  check_event_stream(s);
}

TEST(DataFormats, SparseHugeIdsRemapDensely) {
  EventStream s = parse_event_text(
      "1000000000000000 5 1\n5 1000000000000 2\n1000000000000 1000000000000000 3\n", "snap", "h");
  EXPECT_EQ(s.num_nodes, 3);
  EXPECT_EQ(s.original_id, (std::vector<int64_t>{5, 1000000000000, 1000000000000000}));
  EXPECT_EQ(s.src, (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(s.dst, (std::vector<int32_t>{0, 1, 2}));
}

TEST(DataFormats, GenericCsvFollowsTheColumnMap) {
  LoadOptions o;
  o.format = "csv";
  o.columns = ColumnMap{};
  o.columns.delimiter = ' ';
  o.columns.header = false;
  o.columns.comment = '#';
  o.columns.src = 1;
  o.columns.dst = 2;
  o.columns.time = 0;
  o.columns.label = 3;
  o.columns.split = 4;
  o.columns.first_feature = 5;
  o.columns.bipartite = true;
  EventStream s = parse_event_text(
      "# t u i label split f...\n1.5 4 4 0 0 0.25 1\n"
      "2.5\t4  9 1 2 -1 2e3\n",
      "csv", "g", o);
  EXPECT_TRUE(s.bipartite);
  EXPECT_EQ(s.src, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(s.dst, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(s.label, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(s.split, (std::vector<int8_t>{0, 2}));
  EXPECT_EQ(s.edge_feat, (std::vector<float>{0.25f, 1, -1, 2000}));
  o.columns.first_feature = 2;  // overlaps dst: a config error, not a guess
  try {
    parse_event_text("1 2 3\n", "csv", "g", o);
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
  }
}

TEST(DataFormats, SummaryCountsTiesSelfLoopsAndPairs) {
  StreamSummary m =
      summarize(parse_event_text(read_text(kFixtures + "/snap/tiny.txt"), "snap", "t"));
  EXPECT_EQ(m.num_nodes, 4);
  EXPECT_EQ(m.num_events, 6);
  EXPECT_EQ(m.self_loops, 1);
  EXPECT_EQ(m.tied_events, 2);
  EXPECT_EQ(m.unique_timestamps, 4);
  EXPECT_EQ(m.unique_pairs, 6);
  EXPECT_DOUBLE_EQ(m.time_span, 10);
  EXPECT_NE(describe(m).find("4 nodes, 6 events"), std::string::npos) << describe(m);
}

TEST(DataFormats, CheckEventStreamRejectsBrokenStreams) {
  EventStream s = parse_event_text("1 2 10\n2 3 11\n", "snap", "c");
  check_event_stream(s);
  EventStream bad = s;
  bad.dst[1] = 7;
  EXPECT_THROW(check_event_stream(bad), Error);
  bad = s;
  bad.ts[0] = 12;
  EXPECT_THROW(check_event_stream(bad), Error);
  bad = s;
  bad.event_id.pop_back();
  EXPECT_THROW(check_event_stream(bad), Error);
}

// A format added to the table is documented too: docs/data.md gives each a paragraph
// opening with its title and name.
TEST(DataFormats, DataMdDescribesEveryFormatOfTheTable) {
  const std::string page = read_text(DEPBLOOM_SOURCE_DIR "/docs/data.md");
  const std::string formats = page.substr(page.find("## Formats"));
  for (const detail::FormatEntry& e : detail::format_table()) {
    const std::string opening = fmt::format("**{}** (`{}`)", e.title, e.name);
    EXPECT_NE(formats.find(opening), std::string::npos) << opening << " is not in docs/data.md";
  }
}

}  // namespace
}  // namespace depbloom::data::testing
