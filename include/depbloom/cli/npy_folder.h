// A folder of .npy arrays (and text files) that appears whole or not at all: the files go
// into a temporary folder beside the target, renamed onto it by commit(); a writer dropped
// before commit() removes its temporary folder. For --scores and depbloom-embed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/data/npy.h"

namespace depbloom::cli {

class NpyFolder {
 public:
  explicit NpyFolder(std::string dir);  // runtime error naming the path if it cannot start
  ~NpyFolder();
  NpyFolder(const NpyFolder&) = delete;
  NpyFolder& operator=(const NpyFolder&) = delete;

  // `name` may name a subfolder ("new_nodes/pos.npy"), made on the way.
  void add_npy(const std::string& name, data::NpyDtype dtype, const std::vector<int64_t>& shape,
               const void* values);
  void add_text(const std::string& name, const std::string& text);
  // Replaces `dir` (an existing folder there is removed first) with the written files.
  void commit();

 private:
  std::string dir_, tmp_;
  bool committed_ = false;
};

}  // namespace depbloom::cli
