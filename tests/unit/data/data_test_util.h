// Helpers for the data tests: a temporary folder, file writers, a log capture and the
// reference stream that every format's fixture must load to.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "depbloom/data/event_stream.h"

namespace depbloom::data::testing {

namespace fs = std::filesystem;

inline const std::string kFixtures = DEPBLOOM_FIXTURES_DIR "/data";
inline const std::string kWiki = DEPBLOOM_SOURCE_DIR "/data/wikipedia/wikipedia_edges.csv";
inline const std::string kCollegeMsg = DEPBLOOM_SOURCE_DIR "/data/collegemsg/CollegeMsg.txt";

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("depbloom-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Routes spdlog into a ring buffer for the lifetime of the object.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(512)) {
    previous_ = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const {
    std::string all;
    for (const auto& line : sink_->last_formatted()) all += line;
    return all;
  }
  bool contains(const std::string& s) const { return text().find(s) != std::string::npos; }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

// The six events of the single-id-space fixtures, in file order (original ids):
//   1 2 10 | 2 3 10 | 3 3 15 (self-loop) | 5 1 12 (out of order) | 2 5 20 | 1 3 20
// Sorted stably by time they are rows 0 1 3 2 4 5; ids 1 2 3 5 become 0 1 2 3.
inline void expect_reference_stream(const EventStream& s) {
  EXPECT_EQ(s.num_nodes, 4);
  EXPECT_FALSE(s.bipartite);
  EXPECT_EQ(s.src, (std::vector<int32_t>{0, 1, 3, 2, 1, 0}));
  EXPECT_EQ(s.dst, (std::vector<int32_t>{1, 2, 0, 2, 3, 2}));
  EXPECT_EQ(s.ts, (std::vector<double>{10, 10, 12, 15, 20, 20}));
  EXPECT_EQ(s.event_id, (std::vector<int64_t>{0, 1, 3, 2, 4, 5}));
  EXPECT_EQ(s.original_id, (std::vector<int64_t>{1, 2, 3, 5}));
}

// The JODIE fixture: users 0..2 and items 0..2 in separate id spaces (items become 3..5).
//   u i ts label f1 f2: 0 0 0 0 .1 .2 | 1 0 5 0 .3 .4 | 0 1 5 1 .5 .6 | 2 2 3 0 .7 .8 | 0 2 9 0 .9
//   1
inline void expect_jodie_stream(const EventStream& s) {
  EXPECT_EQ(s.num_nodes, 6);
  EXPECT_TRUE(s.bipartite);
  EXPECT_EQ(s.num_users, 3);
  EXPECT_EQ(s.src, (std::vector<int32_t>{0, 2, 1, 0, 0}));
  EXPECT_EQ(s.dst, (std::vector<int32_t>{3, 5, 3, 4, 5}));
  EXPECT_EQ(s.ts, (std::vector<double>{0, 3, 5, 5, 9}));
  EXPECT_EQ(s.event_id, (std::vector<int64_t>{0, 3, 1, 2, 4}));
  EXPECT_EQ(s.label, (std::vector<int32_t>{0, 0, 0, 1, 0}));
  EXPECT_EQ(s.original_id, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  ASSERT_EQ(s.edge_dim, 2);
  EXPECT_EQ(s.edge_feat,
            (std::vector<float>{0.1f, 0.2f, 0.7f, 0.8f, 0.3f, 0.4f, 0.5f, 0.6f, 0.9f, 1.0f}));
}

inline void expect_same_stream(const EventStream& a, const EventStream& b) {
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.ts, b.ts);
  EXPECT_EQ(a.event_id, b.event_id);
  EXPECT_EQ(a.edge_dim, b.edge_dim);
  EXPECT_EQ(a.edge_feat, b.edge_feat);
  EXPECT_EQ(a.node_dim, b.node_dim);
  EXPECT_EQ(a.node_feat, b.node_feat);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.bipartite, b.bipartite);
  EXPECT_EQ(a.num_users, b.num_users);
  EXPECT_EQ(a.original_id, b.original_id);
}

}  // namespace depbloom::data::testing
