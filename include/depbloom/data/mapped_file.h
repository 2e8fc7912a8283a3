// MappedFile: a whole file mapped read-only into memory (RAII, move-only). The loaders and
// the .npy reader read through it; an empty file maps to an empty view. Not a writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace depbloom::data {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path`; relative paths resolve against the folder open as `dir_fd` (an fd from
  // open(O_DIRECTORY)) when it is >= 0, else against the working directory. A file that
  // cannot be opened throws a data error naming it.
  explicit MappedFile(const std::string& path, int dir_fd = -1);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // false: data_ is a heap copy (the fallback when mmap fails)
  std::string path_;
};

// Size and modification time of a file, for cache validation; throws a data error when
// the file cannot be stat'ed.
struct FileStamp {
  int64_t size = 0;
  int64_t mtime_ns = 0;
};
FileStamp file_stamp(const std::string& path);

}  // namespace depbloom::data
