// NpyFolder: write into <dir>.tmp-<pid>, then swap it in with one rename.
#include "depbloom/cli/npy_folder.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "depbloom/core/error.h"

namespace depbloom::cli {
namespace fs = std::filesystem;

NpyFolder::NpyFolder(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (dir_.empty()) DB_THROW(usage, "an output folder needs a name");
  tmp_ = dir_ + ".tmp-" + std::to_string(getpid());
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  fs::create_directories(tmp_, ec);
  if (ec) DB_THROW(runtime, "cannot create the folder {}: {}", tmp_, ec.message());
}

NpyFolder::~NpyFolder() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);  // nothing half-written stays behind
}

void NpyFolder::add_npy(const std::string& name, data::NpyDtype dtype,
                        const std::vector<int64_t>& shape, const void* values) {
  const fs::path path = fs::path(tmp_) / name;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);  // "sub/x.npy" makes sub/
  if (ec)
    DB_THROW(runtime, "cannot create the folder {}: {}", path.parent_path().string(), ec.message());
  data::write_npy(path.string(), dtype, shape, values);
}

void NpyFolder::add_text(const std::string& name, const std::string& text) {
  const std::string path = (fs::path(tmp_) / name).string();
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) DB_THROW(runtime, "{}: cannot write", path);
}

void NpyFolder::commit() {
  std::error_code ec;
  if (fs::exists(dir_, ec)) fs::remove_all(dir_, ec);
  if (!ec) fs::rename(tmp_, dir_, ec);
  if (ec) DB_THROW(runtime, "cannot move {} to {}: {}", tmp_, dir_, ec.message());
  committed_ = true;
}

}  // namespace depbloom::cli
