// Unit tests of the checkpoint format: round trip of several dtypes and empty blobs, every
// single flipped byte and every truncation rejected as a data error naming the file, and
// atomic writes (no temp file left behind, the old checkpoint intact when a write fails).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/train/checkpoint.h"

namespace depbloom {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("depbloom_ckpt_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

Checkpoint sample() {
  Checkpoint c;
  c.epoch = 3;
  c.step = 12345;
  c.rng_state = {0x0123456789abcdefull, 42, ~0ull};
  c.config_text = "model: tgn\nnote: \"caf\xc3\xa9\"\n";  // UTF-8 survives as bytes
  const float f32[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const double f64[4] = {0.1, -0.2, 1e300, 4.0};
  const int64_t i64[4] = {-1, 0, 1, int64_t{1} << 40};
  const uint8_t u8[5] = {0, 1, 127, 128, 255};
  c.add("memory.weight", DType::f32, {2, 3}, f32, sizeof f32);
  c.add("adam.m", DType::f64, {4}, f64, sizeof f64);
  c.add("sampler.cursor", DType::i64, {2, 2}, i64, sizeof i64);
  c.add("mask", DType::u8, {5}, u8, sizeof u8);
  c.add("empty", DType::f32, {0, 7}, nullptr, 0);
  const int64_t scalar = 99;
  c.add("scalar", DType::i64, {}, &scalar, sizeof scalar);
  return c;
}

std::vector<uint8_t> slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spill(const std::string& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Reading must fail with a data error whose message names the file (and contains `what`).
void expect_data_error(const std::string& p, const std::string& what = "") {
  try {
    read_checkpoint(p);
    ADD_FAILURE() << "read_checkpoint accepted a bad file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
    EXPECT_NE(e.message().find(p), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
  }
}

TEST_F(CheckpointTest, RoundTrip) {
  const Checkpoint c = sample();
  const std::string p = path("a.ckpt");
  write_checkpoint(p, c);
  const Checkpoint r = read_checkpoint(p);
  EXPECT_EQ(r.epoch, c.epoch);
  EXPECT_EQ(r.step, c.step);
  EXPECT_EQ(r.rng_state, c.rng_state);
  EXPECT_EQ(r.config_text, c.config_text);
  EXPECT_EQ(r.source, p);
  ASSERT_EQ(r.blobs.size(), c.blobs.size());
  for (size_t i = 0; i < c.blobs.size(); ++i) {
    EXPECT_EQ(r.blobs[i].name, c.blobs[i].name);
    EXPECT_EQ(r.blobs[i].dtype, c.blobs[i].dtype);
    EXPECT_EQ(r.blobs[i].shape, c.blobs[i].shape);
    EXPECT_EQ(r.blobs[i].bytes, c.blobs[i].bytes);
  }
  const CheckpointBlob& w = r.get("memory.weight", DType::f32, {2, 3});
  float back[6];
  std::memcpy(back, w.bytes.data(), sizeof back);
  EXPECT_EQ(back[2], 3.25f);
  EXPECT_EQ(r.get("empty", DType::f32, {0, 7}).bytes.size(), 0u);
  EXPECT_EQ(r.get("scalar", DType::i64, {}).numel(), 1);
  EXPECT_EQ(r.find("absent"), nullptr);
}

TEST_F(CheckpointTest, EmptyCheckpointRoundTrips) {
  const std::string p = path("empty.ckpt");
  write_checkpoint(p, Checkpoint{});
  const Checkpoint r = read_checkpoint(p);
  EXPECT_TRUE(r.blobs.empty());
  EXPECT_TRUE(r.config_text.empty());
  EXPECT_TRUE(r.rng_state.empty());
}

TEST_F(CheckpointTest, TensorBlobAndLookupErrors) {
  Checkpoint c;
  std::vector<double> v = {1, 2, 3, 4, 5, 6};
  c.add("t", Tensor::wrap(v.data(), Shape(3, 2)));
  EXPECT_THROW(c.add("t", DType::u8, {1}, v.data(), 1), Error);   // duplicate name
  EXPECT_THROW(c.add("u", DType::f32, {3}, v.data(), 8), Error);  // size mismatch
  const std::string p = path("t.ckpt");
  write_checkpoint(p, c);
  const Checkpoint r = read_checkpoint(p);
  EXPECT_EQ(r.get("t", DType::f64, {3, 2}).bytes.size(), 48u);
  for (auto bad : {std::make_pair(DType::f32, std::vector<int64_t>{3, 2}),
                   std::make_pair(DType::f64, std::vector<int64_t>{2, 3}),
                   std::make_pair(DType::f64, std::vector<int64_t>{6})}) {
    try {
      r.get("t", bad.first, bad.second);
      ADD_FAILURE() << "mismatch accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::data);
      EXPECT_NE(e.message().find(p), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("'t'"), std::string::npos) << e.message();
    }
  }
  EXPECT_THROW(r.get("missing", DType::f64, {3, 2}), Error);
}

TEST_F(CheckpointTest, EveryFlippedByteIsDetected) {
  const std::string good = path("good.ckpt");
  write_checkpoint(good, sample());
  const std::vector<uint8_t> bytes = slurp(good);
  ASSERT_GT(bytes.size(), 100u);
  const std::string p = path("flipped.ckpt");
  // Header, config, every blob and the trailer: each offset on its own.
  for (size_t off = 0; off < bytes.size(); ++off) {
    std::vector<uint8_t> bad = bytes;
    bad[off] ^= 0x20;
    spill(p, bad);
    SCOPED_TRACE("offset " + std::to_string(off));
    expect_data_error(p);
  }
}

TEST_F(CheckpointTest, MessagesSayWhatIsWrong) {
  const std::string good = path("good.ckpt");
  write_checkpoint(good, sample());
  const std::vector<uint8_t> bytes = slurp(good);
  const std::string p = path("bad.ckpt");
  std::vector<uint8_t> bad = bytes;
  bad[0] = 'X';
  spill(p, bad);
  expect_data_error(p, "bad magic");
  bad = bytes;
  bad[16] = 2;  // version 2
  spill(p, bad);
  expect_data_error(p, "unsupported checkpoint version 2");
  bad = bytes;
  bad[bytes.size() / 2] ^= 1;  // inside the blob data
  spill(p, bad);
  expect_data_error(p, "checksum mismatch");
  bad.assign(bytes.begin(), bytes.end() - 5);
  spill(p, bad);
  expect_data_error(p, "truncated");
  expect_data_error(path("does-not-exist.ckpt"), "cannot open");
}

TEST_F(CheckpointTest, EveryTruncationIsDetected) {
  const std::string good = path("good.ckpt");
  write_checkpoint(good, sample());
  const std::vector<uint8_t> bytes = slurp(good);
  const std::string p = path("short.ckpt");
  for (size_t len = 0; len < bytes.size(); ++len) {
    spill(p, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(len)));
    SCOPED_TRACE("length " + std::to_string(len));
    expect_data_error(p, "truncated");
  }
  // Extra bytes after the trailer are refused too.
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  spill(p, longer);
  expect_data_error(p);
}

TEST_F(CheckpointTest, NoTempFileLeftAndOverwriteReplaces) {
  const std::string p = path("run.ckpt");
  Checkpoint c = sample();
  write_checkpoint(p, c);
  c.epoch = 4;
  write_checkpoint(p, c);
  EXPECT_EQ(read_checkpoint(p).epoch, 4);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"run.ckpt"});
}

TEST_F(CheckpointTest, FailedWriteLeavesOldCheckpointIntact) {
  const std::string p = path("run.ckpt");
  write_checkpoint(p, sample());
  const std::vector<uint8_t> before = slurp(p);
  // A folder squatting on the temp name makes the write fail whoever runs the test.
  const std::string tmp = p + ".tmp." + std::to_string(::getpid());
  fs::create_directory(tmp);
  Checkpoint c = sample();
  c.epoch = 99;
  try {
    write_checkpoint(p, c);
    ADD_FAILURE() << "write into a blocked temp path succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runtime);
    EXPECT_NE(e.message().find(p), std::string::npos) << e.message();
  }
  EXPECT_EQ(slurp(p), before);
  EXPECT_EQ(read_checkpoint(p).epoch, 3);
}

TEST_F(CheckpointTest, ReadOnlyFolderLeavesOldCheckpointIntact) {
  const std::string p = path("run.ckpt");
  write_checkpoint(p, sample());
  const std::vector<uint8_t> before = slurp(p);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  // root ignores folder permissions, so there is nothing to observe there.
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions are not enforced";
  Checkpoint c = sample();
  c.epoch = 99;
  EXPECT_THROW(write_checkpoint(p, c), Error);
  EXPECT_EQ(slurp(p), before);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"run.ckpt"});
}

TEST(Fnv1a64, KnownValues) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace depbloom
