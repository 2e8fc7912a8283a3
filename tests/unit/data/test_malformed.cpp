// The malformed-input corpus: each case ends in one data error whose message names the
// file and line and says what is wrong (the documented text), never a crash or a guess.
#include <gtest/gtest.h>

#include "data_test_util.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/npy.h"

namespace depbloom::data::testing {
namespace {

struct Malformed {
  const char* name;
  const char* format;
  std::string text;
  const char* expected;  // substring of the message, after "bad.txt"
};

const Malformed kCorpus[] = {
    {"NonNumericId", "snap", "1 2 10\n1 x 11\n", ":2: dst 'x' is not an integer: `1 x 11`"},
    {"FloatId", "snap", "1.5 2 3\n", ":1: src '1.5' is not an integer"},
    {"NonNumericTime", "snap", "1 2 ten\n", ":1: timestamp 'ten' is not a number"},
    {"TooFewFields", "snap", "1 2 10\n1 2\n", ":2: expected 3 fields, found 2: `1 2`"},
    {"TooManyFields", "snap", "1 2 10 4\n", ":1: expected 3 fields, found 4"},
    {"NegativeId", "snap", "1 -2 10\n", ":1: negative node id '-2' in dst"},
    {"OverflowingId", "snap", "99999999999999999999 1 5\n",
     ":1: src '99999999999999999999' overflows a 64-bit integer"},
    {"NanTime", "snap", "1 2 nan\n", ":1: timestamp 'nan' is not finite"},
    {"InfiniteTime", "snap", "1 2 -inf\n", ":1: timestamp '-inf' is not finite"},
    {"OverflowingTime", "snap", "1 2 1e999\n", ":1: timestamp '1e999' is not finite"},
    {"EmptyFile", "snap", "", ": the file is empty"},
    {"OnlyComments", "snap", "# nothing\n\n  \n", ": the file holds no events"},
    {"EmptyField", "csv", "a,b,c\n1,2,\n", ":2: timestamp is empty"},
    {"CsvColumnPastRow", "csv", "a,b,c\n1,2\n",
     ":2: data.columns.time is column 2 (0-based), but the line has 2 fields"},
    {"JodieNoHeader", "jodie", "0,1,1,0\n",
     ":1: this line looks like data, but the JODIE format starts with a header line"},
    {"JodieFeatureWidth", "jodie", "u,i,ts,label\n0,1,1,0,0.5,0.5\n0,1,2,0,0.5\n",
     ":3: 1 edge features, but line 2 has 2"},
    {"JodieTooFewFields", "jodie", "u,i,ts,label\n0,1,1\n",
     ":2: expected at least 4 fields, found 3"},
    {"JodieBadFeature", "jodie", "u,i,ts,label\n0,1,1,0,abc\n",
     ":2: edge feature 'abc' is not a number"},
    {"FeatureOverflowsFloat", "jodie", "u,i,ts,label\n0,1,1,0,1e39\n",
     ":2: edge feature '1e39' overflows float32"},
    {"NonIntegerLabel", "tgn", ",u,i,ts,label,idx\n0,1,2,3.0,0.5,1\n",
     ":2: label '0.5' is not an integer"},
    {"TgnWrongHeader", "tgn", "u,i,ts\n1,2,3\n", ":1: expected the TGN header `,u,i,ts,label,idx`"},
    {"TgnFieldCount", "tgn", ",u,i,ts,label,idx\n0,1,2,3.0,0.0\n",
     ":2: expected 6 fields, found 5"},
    {"TgnNegativeIdx", "tgn", ",u,i,ts,label,idx\n0,1,2,3.0,0.0,-4\n",
     ":2: negative feature row idx"},
    {"TglSplitValue", "tgl", ",src,dst,time,int_roll,ext_roll\n0,1,2,3,0,3\n",
     ":2: split '3' must be 0 (train), 1 (val) or 2 (test)"},
    {"TglMissingColumn", "tgl", ",source,dst,time\n0,1,2,3\n",
     ":1: the TGL header needs the columns src, dst and time"},
    {"KonectNoTime", "konect", "% sym unweighted\n1 2\n",
     ":2: KONECT lines hold `src dst [weight] time`; found 2 fields (no timestamp column"},
    {"KonectMixedWidths", "konect", "1 2 1 5\n1 3 6\n", ":2: expected 4 fields, found 3"},
    {"BinaryGarbage", "snap", std::string("\x00\x01\x02 \xff\xfe 7\n", 9),
     ":1: src '?\?\?' is not an integer"},
    {"LongLineIsCut", "snap", "1 2 " + std::string(200, '9') + "x\n",
     "9999999999999999999999999999999999999999999999999999...`"},
};

class MalformedInput : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedInput, FailsWithItsDocumentedMessage) {
  const Malformed& c = GetParam();
  LoadOptions o;
  if (std::string(c.format) == "csv") o.columns.header = true;
  try {
    EventStream s = parse_event_text(c.text, c.format, "bad.txt", o);
    FAIL() << "loaded " << s.num_events() << " events";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_EQ(exit_code(e.kind()), 3);
    EXPECT_EQ(e.message().rfind("bad.txt", 0), 0u) << e.message();
    EXPECT_NE(e.message().find(c.expected), std::string::npos)
        << "message: " << e.message() << "\nexpected: " << c.expected;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedInput, ::testing::ValuesIn(kCorpus),
                         [](const auto& info) { return std::string(info.param.name); });

// Files on disk: detection failures and feature files that do not fit the events.
TEST(MalformedFiles, DetectionFailuresSayWhatToSet) {
  TempDir dir;
  auto expect_error = [](const std::string& path, const std::string& expected,
                         LoadOptions o = LoadOptions{}) {
    o.use_cache = false;
    try {
      load_events(path, o);
      FAIL() << path << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(expected), std::string::npos) << e.message();
    }
  };
  expect_error(write_text(dir.file("words.txt"), "hello world\n"),
               "words.txt:1: cannot tell the format of this file; set data.format");
  expect_error(write_text(dir.file("nohead.csv"), "1,2,3\n"),
               "nohead.csv:1: comma-separated rows without a header: set data.format: csv");
  expect_error(write_text(dir.file("empty.txt"), ""), "empty.txt: the file is empty");
  expect_error(dir.file("missing.csv"), "missing.csv: no such file or folder");
  expect_error(dir.path().string(), "holds no events file");
  LoadOptions unknown;
  unknown.format = "parquet";
  try {
    load_events(dir.file("words.txt"), unknown);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(e.message().find("unknown format 'parquet'"), std::string::npos);
  }
  // An empty data.columns.delimiter (what `--set data.columns.delimiter= ` gives).
  LoadOptions no_delimiter;
  no_delimiter.format = "csv";
  no_delimiter.columns.delimiter = '\0';
  try {
    parse_event_text("a,b,c\n1,2,3\n", "csv", "x.csv", no_delimiter);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(e.message().find("data.columns.delimiter: needs one character"), std::string::npos)
        << e.message();
  }
}

TEST(MalformedFiles, FeatureFilesMustFitTheEvents) {
  TempDir dir;
  LoadOptions o;
  o.use_cache = false;
  const std::string tgn = read_text(kFixtures + "/tgn/ml_tiny.csv");
  // An idx beyond the rows of ml_x.npy.
  std::string far = tgn;
  far.replace(far.find(",6\n"), 3, ",9\n");
  write_text(dir.file("t1/ml_x.csv"), far);
  std::filesystem::copy_file(kFixtures + "/tgn/ml_tiny.npy", dir.file("t1/ml_x.npy"));
  try {
    load_events(dir.file("t1/ml_x.csv"), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("ml_x.csv:7: idx 9 has no row in"), std::string::npos)
        << e.message();
  }
  // Node features with too few rows for id 5.
  write_text(dir.file("t2/ml_y.csv"), tgn);
  std::filesystem::copy_file(kFixtures + "/tgn/ml_tiny.npy", dir.file("t2/ml_y.npy"));
  const std::vector<float> five_rows(10, 0.5f);
  write_npy(dir.file("t2/ml_y_node.npy"), NpyDtype::f4, {5, 2}, five_rows.data());
  try {
    load_events(dir.file("t2/ml_y.csv"), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("has no row for node 5 of"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(": 5 rows of node features, 6 needed"), std::string::npos)
        << e.message();
  }
  // TGL edge features with a row count unlike the event count.
  write_text(dir.file("t3/edges.csv"), read_text(kFixtures + "/tgl/edges.csv"));
  std::filesystem::copy_file(kFixtures + "/tgn/ml_tiny.npy", dir.file("t3/edge_features.npy"));
  try {
    load_events(dir.file("t3"), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("7 rows of edge features for 6 events"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace depbloom::data::testing
