// Node-classification labels (data/node_labels.h): the stream's label column, a
// (node, time, label) file matched to events by original source id and timestamp, and the
// errors naming the file and line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data_test_util.h"
#include "depbloom/core/error.h"
#include "depbloom/data/node_labels.h"

namespace depbloom::data {
namespace {

using testing::TempDir;
using testing::write_text;

// Four events of a bipartite stream whose users have original ids 10 and 20 (dense 0 and
// 1) and whose item is dense 2; events 1 and 2 share user 20's timestamp 5.
EventStream small_stream() {
  EventStream s;
  s.source = "small.csv";
  s.src = {0, 1, 1, 0};
  s.dst = {2, 2, 2, 2};
  s.ts = {1, 5, 5, 9.5};
  s.event_id = {0, 1, 2, 3};
  s.num_nodes = 3;
  s.bipartite = true;
  s.num_users = 2;
  s.original_id = {10, 20, 7};
  return s;
}

TEST(NodeLabels, StreamColumnLabelsEveryEvent) {
  EventStream s = small_stream();
  s.label = {0, 3, 0, 1};
  EXPECT_EQ(event_labels(s, ""), (std::vector<int8_t>{0, 1, 0, 1}));
}

TEST(NodeLabels, NoColumnAndNoFileSaysHowToGiveLabels) {
  try {
    event_labels(small_stream(), "");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("small.csv: the stream has no label column"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("classify.labels"), std::string::npos);
  }
}

TEST(NodeLabels, FileLabelsTheMatchingEventsOnly) {
  const TempDir dir;
  const std::string commas = write_text(dir.file("a.csv"), "node,time,label\n20,5,1\n# c\n\n10,9.5,0\n");
  EXPECT_EQ(event_labels(small_stream(), commas), (std::vector<int8_t>{-1, 1, 1, 0}));
  const std::string blanks = write_text(dir.file("b.txt"), "10 1 1\r\n");
  EXPECT_EQ(event_labels(small_stream(), blanks), (std::vector<int8_t>{1, -1, -1, -1}));
}

struct BadLine {
  const char* name;
  const char* text;
  const char* message;  // after "<file>:<line>: "
};

class NodeLabelsBadLine : public ::testing::TestWithParam<BadLine> {};

TEST_P(NodeLabelsBadLine, NamesTheFileAndLine) {
  const TempDir dir;
  const std::string path = write_text(dir.file("labels.csv"), GetParam().text);
  try {
    event_labels(small_stream(), path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find(path + ":2: " + GetParam().message), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Lines, NodeLabelsBadLine,
    ::testing::Values(BadLine{"label_two", "10,1,0\n20,5,2\n", "the label must be 0 or 1"},
                      BadLine{"no_event", "10,1,0\n10,5,1\n", "no event of the stream"},
                      BadLine{"not_a_number", "10,1,0\n10,x,1\n", ""},
                      BadLine{"too_few_fields", "10,1,0\n10,1\n", ""}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace depbloom::data
