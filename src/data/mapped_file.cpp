// MappedFile over POSIX mmap, with a read() fallback for files that cannot be mapped
// (some network and virtual file systems).
#include "depbloom/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "depbloom/core/error.h"

namespace depbloom::data {
namespace {

// Closes the descriptor on every exit path of the constructor.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

char* read_all(int fd, size_t size, const std::string& path) {
  auto buffer = std::make_unique<char[]>(size);
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, buffer.get() + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) DB_THROW(data, "{}: cannot read: {}", path, std::strerror(errno));
    done += static_cast<size_t>(got);
  }
  return buffer.release();
}

}  // namespace

MappedFile::MappedFile(const std::string& path, int dir_fd) : path_(path) {
  int fd = ::openat(dir_fd >= 0 ? dir_fd : AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) DB_THROW(data, "{}: cannot open: {}", path, std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) DB_THROW(data, "{}: cannot stat: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) DB_THROW(data, "{}: is a folder, not a file", path);
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const char*>(p);
    mapped_ = true;
  } else {
    data_ = read_all(fd, size_, path);
  }
}

MappedFile::~MappedFile() {
  release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    path_ = std::move(other.path_);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ == nullptr) return;
  if (mapped_) {
    ::munmap(const_cast<char*>(data_), size_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  size_ = 0;
}

FileStamp file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    DB_THROW(data, "{}: cannot stat: {}", path, std::strerror(errno));
  }
  return FileStamp{static_cast<int64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

}  // namespace depbloom::data
