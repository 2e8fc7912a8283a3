// Checkpoint serialisation: the whole file is built in memory, summed, written to a temp
// file and renamed into place; reading loads the file, checks header, size and checksum
// first, then parses with a cursor that refuses to step past the end.
#include "depbloom/train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/ranges.h>

#include "depbloom/core/error.h"

// The format is little-endian and this code copies integers as they lie in memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoint I/O assumes little-endian");

namespace depbloom {
namespace {

constexpr char kMagic[16] = {'D', 'E', 'P', 'B', 'L', 'O', 'O', 'M',
                             '-', 'C', 'K', 'P', 'T', 0,   0,   0};
constexpr char kEndMagic[8] = {'C', 'K', 'P', 'T', '-', 'E', 'N', 'D'};
constexpr size_t kHeaderBytes = 16 + 4 + 4 + 8;
constexpr size_t kTrailerBytes = 8 + 8;
constexpr uint8_t kMaxDType = static_cast<uint8_t>(DType::u8);

// Product of the dims, or -1 if a dim is negative or the product overflows 2^62.
int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > (int64_t{1} << 62) / d) return -1;
    n *= d;
  }
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

class Writer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + n);
  }
  std::vector<uint8_t> out;
};

// Bounds-checked reads; running out means the sizes inside the file do not add up.
class Reader {
 public:
  Reader(const std::string& path, const uint8_t* data, size_t size)
      : path_(path), data_(data), size_(size) {}
  template <class T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  const uint8_t* take(uint64_t n, const char* what) {
    if (n > size_ - pos_)
      DB_THROW(data, "{}: corrupt: {} ({} bytes at offset {}) runs past the end of the data", path_,
               what, n, pos_);
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& path_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string errno_text() {
  return std::strerror(errno);
}

// Writes all of `data`, retrying short writes; false on error (errno set).
bool write_all(int fd, const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::vector<uint8_t> serialise(const Checkpoint& c) {
  Writer w;
  w.put_bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kCheckpointVersion);
  w.put<uint32_t>(static_cast<uint32_t>(c.blobs.size()));
  w.put<uint64_t>(0);  // file size, patched below
  w.put<int64_t>(c.epoch);
  w.put<int64_t>(c.step);
  w.put<uint32_t>(static_cast<uint32_t>(c.rng_state.size()));
  for (uint64_t r : c.rng_state) w.put<uint64_t>(r);
  w.put<uint64_t>(c.config_text.size());
  w.put_bytes(c.config_text.data(), c.config_text.size());
  std::set<std::string> names;
  for (const CheckpointBlob& b : c.blobs) {
    // `blobs` is public, so a blob may not have come through add(); refuse to write one
    // that the reader would reject.
    const int64_t n = checked_numel(b.shape);
    DB_ASSERT(b.shape.size() <= 255 && b.name.size() <= UINT32_MAX && n >= 0 &&
                  static_cast<uint64_t>(n) * dtype_size(b.dtype) == b.bytes.size(),
              "checkpoint blob '{}' is inconsistent: {} bytes for {}{}", b.name, b.bytes.size(),
              dtype_name(b.dtype), shape_str(b.shape));
    DB_ASSERT(names.insert(b.name).second, "checkpoint blob '{}' appears twice", b.name);
    w.put<uint32_t>(static_cast<uint32_t>(b.name.size()));
    w.put_bytes(b.name.data(), b.name.size());
    w.put<uint8_t>(static_cast<uint8_t>(b.dtype));
    w.put<uint8_t>(static_cast<uint8_t>(b.shape.size()));
    for (int64_t d : b.shape) w.put<int64_t>(d);
    w.put<uint64_t>(b.bytes.size());
    w.put_bytes(b.bytes.data(), b.bytes.size());
  }
  const uint64_t total = w.out.size() + kTrailerBytes;
  std::memcpy(w.out.data() + 24, &total, sizeof total);
  w.put<uint64_t>(fnv1a64(w.out.data(), w.out.size()));
  w.put_bytes(kEndMagic, sizeof kEndMagic);
  return std::move(w.out);
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

int64_t CheckpointBlob::numel() const {
  return checked_numel(shape);
}

void Checkpoint::add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                     const void* data, size_t bytes) {
  DB_ASSERT(!name.empty() && name.size() < (size_t{1} << 20), "blob name of {} bytes", name.size());
  DB_ASSERT(find(name) == nullptr, "checkpoint blob '{}' added twice", name);
  DB_ASSERT(shape.size() <= 255, "blob '{}' has {} dims (at most 255)", name, shape.size());
  const int64_t n = checked_numel(shape);
  DB_ASSERT(n >= 0 && static_cast<uint64_t>(n) * dtype_size(dtype) == bytes,
            "blob '{}': {} bytes do not match {} {}", name, bytes, dtype_name(dtype),
            shape_str(shape));
  DB_ASSERT(bytes == 0 || data != nullptr, "blob '{}': null data", name);
  CheckpointBlob b;
  b.name = name;
  b.dtype = dtype;
  b.shape = std::move(shape);
  const auto* p = static_cast<const uint8_t*>(data);
  if (bytes > 0) b.bytes.assign(p, p + bytes);
  blobs.push_back(std::move(b));
}

void Checkpoint::add(const std::string& name, const Tensor& t) {
  DB_ASSERT(t.device().is_cpu(), "blob '{}': tensor {} is not on the host", name, t.str());
  std::vector<int64_t> shape(t.shape().dims.begin(), t.shape().dims.begin() + t.rank());
  add(name, t.dtype(), std::move(shape), t.raw(), t.bytes());
}

const CheckpointBlob* Checkpoint::find(const std::string& name) const {
  for (const CheckpointBlob& b : blobs)
    if (b.name == name) return &b;
  return nullptr;
}

const CheckpointBlob& Checkpoint::get(const std::string& name, DType dtype,
                                      const std::vector<int64_t>& shape) const {
  const std::string& where = source.empty() ? std::string("checkpoint") : source;
  const CheckpointBlob* b = find(name);
  if (b == nullptr) DB_THROW(data, "{}: no blob named '{}'", where, name);
  if (b->dtype != dtype || b->shape != shape)
    DB_THROW(data, "{}: blob '{}' is {}{}, expected {}{}", where, name, dtype_name(b->dtype),
             shape_str(b->shape), dtype_name(dtype), shape_str(shape));
  return *b;
}

void write_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  const std::vector<uint8_t> bytes = serialise(ckpt);
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) DB_THROW(runtime, "{}: cannot create {}: {}", path, tmp, errno_text());
  bool ok = write_all(fd, bytes.data(), bytes.size());
  std::string failed = ok ? "" : "write: " + errno_text();
  // fsync before the rename: otherwise a crash can leave the new name on empty data.
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    failed = "fsync: " + errno_text();
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    failed = "close: " + errno_text();
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    failed = "rename: " + errno_text();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    DB_THROW(runtime, "{}: writing the checkpoint failed ({})", path, failed);
  }
  // Persist the rename itself; best effort, the data is already complete on disk.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) DB_THROW(data, "{}: cannot open checkpoint: {}", path, errno_text());
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (in.bad()) DB_THROW(data, "{}: reading the checkpoint failed", path);

  if (file.empty()) DB_THROW(data, "{}: truncated: the file is empty", path);
  // A short file that starts like a checkpoint is a truncated one, not a foreign one.
  const size_t probe = std::min(file.size(), sizeof kMagic);
  if (std::memcmp(file.data(), kMagic, probe) != 0)
    DB_THROW(data, "{}: bad magic: not a DepBloom checkpoint", path);
  if (file.size() < kHeaderBytes + kTrailerBytes)
    DB_THROW(data, "{}: truncated: {} bytes, shorter than the header and trailer", path,
             file.size());
  Reader r(path, file.data(), file.size());
  r.take(sizeof kMagic, "magic");
  const auto version = r.get<uint32_t>("version");
  if (version != kCheckpointVersion)
    DB_THROW(data, "{}: unsupported checkpoint version {} (this build reads {})", path, version,
             kCheckpointVersion);
  const auto n_blobs = r.get<uint32_t>("blob count");
  const auto total = r.get<uint64_t>("file size");
  if (file.size() < total)
    DB_THROW(data, "{}: truncated: {} bytes, the header says {}", path, file.size(), total);
  if (file.size() > total)
    DB_THROW(data, "{}: {} bytes, the header says {} (trailing data or corrupt header)", path,
             file.size(), total);
  const size_t body = file.size() - kTrailerBytes;
  if (std::memcmp(file.data() + body + 8, kEndMagic, sizeof kEndMagic) != 0)
    DB_THROW(data, "{}: corrupt trailer (end marker missing)", path);
  uint64_t stored = 0;
  std::memcpy(&stored, file.data() + body, sizeof stored);
  const uint64_t actual = fnv1a64(file.data(), body);
  if (stored != actual)
    DB_THROW(data, "{}: checksum mismatch (stored {:016x}, computed {:016x}): file is corrupt",
             path, stored, actual);

  // The checksum matched, so what follows only fails for a file written by a broken writer;
  // still, every size is checked against what is left.
  Reader b(path, file.data(), body);
  b.take(kHeaderBytes, "header");
  Checkpoint c;
  c.source = path;
  c.epoch = b.get<int64_t>("epoch");
  c.step = b.get<int64_t>("step");
  const auto n_rng = b.get<uint32_t>("rng word count");
  const uint8_t* rng = b.take(uint64_t{n_rng} * 8, "rng state");
  c.rng_state.resize(n_rng);
  if (n_rng > 0) std::memcpy(c.rng_state.data(), rng, size_t{n_rng} * 8);
  const auto config_len = b.get<uint64_t>("config size");
  const uint8_t* config = b.take(config_len, "config text");
  c.config_text.assign(reinterpret_cast<const char*>(config), static_cast<size_t>(config_len));
  for (uint32_t i = 0; i < n_blobs; ++i) {
    CheckpointBlob blob;
    const auto name_len = b.get<uint32_t>("blob name size");
    const uint8_t* name = b.take(name_len, "blob name");
    blob.name.assign(reinterpret_cast<const char*>(name), name_len);
    const auto dtype = b.get<uint8_t>("blob dtype");
    if (dtype > kMaxDType)
      DB_THROW(data, "{}: blob '{}' has unknown dtype tag {}", path, blob.name, dtype);
    blob.dtype = static_cast<DType>(dtype);
    const auto ndim = b.get<uint8_t>("blob rank");
    for (uint8_t d = 0; d < ndim; ++d) blob.shape.push_back(b.get<int64_t>("blob dims"));
    const auto n_bytes = b.get<uint64_t>("blob size");
    const int64_t n = checked_numel(blob.shape);
    if (n < 0 || static_cast<uint64_t>(n) * dtype_size(blob.dtype) != n_bytes)
      DB_THROW(data, "{}: blob '{}' holds {} bytes, which does not fit {}{}", path, blob.name,
               n_bytes, dtype_name(blob.dtype), shape_str(blob.shape));
    const uint8_t* data = b.take(n_bytes, "blob data");
    blob.bytes.assign(data, data + n_bytes);
    if (c.find(blob.name) != nullptr)
      DB_THROW(data, "{}: blob '{}' appears twice", path, blob.name);
    c.blobs.push_back(std::move(blob));
  }
  if (b.pos() != body)
    DB_THROW(data, "{}: {} unparsed bytes before the trailer", path, body - b.pos());
  return c;
}

}  // namespace depbloom
