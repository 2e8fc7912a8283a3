// The event cache: written on the first load, used while the source's size and mtime and
// the options match, rebuilt when they change or the cache is corrupt, and published
// atomically so that concurrent loaders (threads or processes) never see half a cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "data_test_util.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/npy.h"

namespace depbloom::data::testing {
namespace {

LoadOptions cached_in(const TempDir& dir) {
  LoadOptions o;
  o.cache_dir = dir.file("cache");
  return o;
}

void set_mtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

int count_entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(EventCache, SecondLoadComesFromTheCache) {
  TempDir dir;
  const std::string src = write_text(dir.file("tiny.txt"), read_text(kFixtures + "/snap/tiny.txt"));
  const LoadOptions o = cached_in(dir);
  EventStream first;
  {
    LogCapture log;
    first = load_events(src, o);
    EXPECT_TRUE(log.contains("building the cache")) << log.text();
  }
  const std::string folder = cache_folder(src, o);
  EXPECT_TRUE(fs::exists(folder + "/meta.json"));
  EXPECT_TRUE(fs::exists(folder + "/src.npy"));
  LogCapture log;
  EventStream second = load_events(src, o);
  EXPECT_TRUE(log.contains("from the cache")) << log.text();
  expect_reference_stream(second);
  expect_same_stream(first, second);
  EXPECT_EQ(second.name, "tiny");
  EXPECT_EQ(count_entries(dir.file("cache")), 1);  // no temporary folders left behind
}

TEST(EventCache, CacheFilesAreNumpyArrays) {
  TempDir dir;
  const LoadOptions o = cached_in(dir);
  load_events(write_text(dir.file("j.csv"), read_text(kFixtures + "/jodie/tiny_jodie.csv")), o);
  const std::string folder = cache_folder(dir.file("j.csv"), o);
  NpyArray src = NpyArray::open(folder + "/src.npy");
  EXPECT_EQ(src.dtype(), NpyDtype::i4);
  EXPECT_EQ(src.to_int32(), (std::vector<int32_t>{0, 2, 1, 0, 0}));
  NpyArray feat = NpyArray::open(folder + "/edge_feat.npy");
  EXPECT_EQ(feat.shape(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(NpyArray::open(folder + "/ts.npy").dtype(), NpyDtype::f8);
  EXPECT_EQ(NpyArray::open(folder + "/label.npy").to_int32(),
            (std::vector<int32_t>{0, 0, 0, 1, 0}));
}

TEST(EventCache, ChangedSourceIsRebuilt) {
  TempDir dir;
  const std::string text = read_text(kFixtures + "/snap/tiny.txt");
  const std::string src = write_text(dir.file("tiny.txt"), text);
  const LoadOptions o = cached_in(dir);
  set_mtime(src, 1000000);
  load_events(src, o);
  // Same size, other mtime.
  set_mtime(src, 2000000);
  {
    LogCapture log;
    load_events(src, o);
    EXPECT_TRUE(log.contains("the source files or the loader options changed")) << log.text();
  }
  // Another event appended: a new size.
  write_text(src, text + "5 2 30\n");
  LogCapture log;
  EventStream s = load_events(src, o);
  EXPECT_EQ(s.num_events(), 7);
  EXPECT_TRUE(log.contains("building the cache")) << log.text();
  EventStream again = load_events(src, o);
  EXPECT_EQ(again.num_events(), 7);
}

TEST(EventCache, OtherOptionsUseAnotherFolder) {
  TempDir dir;
  const std::string src = write_text(dir.file("tiny.txt"), read_text(kFixtures + "/snap/tiny.txt"));
  LoadOptions keep = cached_in(dir);
  LoadOptions drop = keep;
  drop.drop_self_loops = true;
  EXPECT_NE(cache_folder(src, keep), cache_folder(src, drop));
  EXPECT_EQ(load_events(src, keep).num_events(), 6);
  EXPECT_EQ(load_events(src, drop).num_events(), 5);
  LogCapture log;
  EXPECT_EQ(load_events(src, keep).num_events(), 6);
  EXPECT_EQ(load_events(src, drop).num_events(), 5);
  EXPECT_TRUE(log.contains("from the cache")) << log.text();
}

TEST(EventCache, CorruptCacheIsRebuiltWithAWarning) {
  TempDir dir;
  const std::string src = write_text(dir.file("tiny.txt"), read_text(kFixtures + "/snap/tiny.txt"));
  const LoadOptions o = cached_in(dir);
  load_events(src, o);
  const std::string folder = cache_folder(src, o);
  fs::resize_file(folder + "/dst.npy", 100);
  {
    LogCapture log;
    expect_reference_stream(load_events(src, o));
    EXPECT_TRUE(log.contains("the cache is unreadable")) << log.text();
    EXPECT_TRUE(log.contains("dst.npy: truncated .npy")) << log.text();
  }
  write_text(folder + "/meta.json", "{not json");
  {
    LogCapture log;
    expect_reference_stream(load_events(src, o));
    EXPECT_TRUE(log.contains("the cache is unreadable")) << log.text();
  }
  LogCapture log;
  expect_reference_stream(load_events(src, o));
  EXPECT_TRUE(log.contains("from the cache")) << log.text();
}

TEST(EventCache, UnwritableCacheOnlyWarns) {
  TempDir dir;
  const std::string src = write_text(dir.file("tiny.txt"), read_text(kFixtures + "/snap/tiny.txt"));
  // A cache folder below a plain file cannot be created, not even by root.
  LoadOptions o;
  o.cache_dir = write_text(dir.file("plain"), "x") + "/cache";
  LogCapture log;
  expect_reference_stream(load_events(src, o));
  EXPECT_TRUE(log.contains("cannot write the cache")) << log.text();
}

TEST(EventCache, ConcurrentThreadsNeverSeeHalfACache) {
  TempDir dir;
  const std::string src =
      write_text(dir.file("j.csv"), read_text(kFixtures + "/jodie/tiny_jodie.csv"));
  const LoadOptions o = cached_in(dir);
  for (int round = 0; round < 5; ++round) {
    set_mtime(src, 1000000 + round);  // each round starts from a stale cache
    std::vector<EventStream> got(8);
    std::vector<std::string> errors(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        try {
          got[t] = load_events(src, o);
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 8; ++t) {
      EXPECT_EQ(errors[t], "");
      expect_jodie_stream(got[t]);
    }
  }
  EXPECT_EQ(count_entries(dir.file("cache")), 1);
}

TEST(EventCache, ConcurrentProcessesNeverSeeHalfACache) {
  TempDir dir;
  const std::string src = write_text(dir.file("tiny.txt"), read_text(kFixtures + "/snap/tiny.txt"));
  const LoadOptions o = cached_in(dir);
  std::vector<pid_t> children;
  for (int p = 0; p < 6; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        spdlog::set_level(spdlog::level::off);
        for (int k = 0; k < 20; ++k) {
          EventStream s = load_events(src, o);
          if (s.num_events() != 6 || s.event_id != std::vector<int64_t>{0, 1, 3, 2, 4, 5})
            status = 1;
        }
      } catch (...) {
        status = 2;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = -1;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_EQ(count_entries(dir.file("cache")), 1);
}

TEST(EventCache, WriteAndReadAFolderDirectly) {
  TempDir dir;
  LoadOptions no_cache;
  no_cache.use_cache = false;
  EventStream s = load_events(kFixtures + "/tgn/ml_tiny.csv", no_cache);
  write_event_cache(s, dir.file("c/"));
  expect_same_stream(read_event_cache(dir.file("c")), s);
  write_event_cache(s, dir.file("c"));  // replaces the folder
  expect_same_stream(read_event_cache(dir.file("c")), s);
  EXPECT_EQ(count_entries(dir.path().string()), 1);
  EXPECT_THROW(read_event_cache(dir.file("none")), Error);
  expect_same_stream(load_events(dir.file("c"), no_cache), s);  // a cache folder loads too
}

}  // namespace
}  // namespace depbloom::data::testing
