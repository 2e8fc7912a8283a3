// Checkpoint files: named binary blobs (dtype, shape, bytes) plus the effective config as
// UTF-8 text and the resume metadata (epoch, step, RNG state), with a checksum trailer.
// Written atomically (temp file, fsync, rename); read with every size and the sum checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/core/tensor.h"

namespace depbloom {

// File layout (little-endian), version 1:
//   "DEPBLOOM-CKPT\0\0\0" (16 bytes) | u32 version | u32 blob count | u64 file size
//   i64 epoch | i64 step | u32 rng words | u64 rng[words] | u64 config bytes | config
//   per blob: u32 name bytes | name | u8 dtype | u8 ndim | i64 dims[ndim] | u64 bytes | data
//   trailer: u64 FNV-1a 64 of every byte before it | "CKPT-END" (8 bytes)
// FNV-1a catches any single changed byte for sure (each step is a bijection of the state).
inline constexpr uint32_t kCheckpointVersion = 1;

struct CheckpointBlob {
  std::string name;
  DType dtype = DType::u8;
  std::vector<int64_t> shape;  // up to 255 dims; empty = scalar
  std::vector<uint8_t> bytes;  // numel(shape) * dtype_size(dtype)

  int64_t numel() const;
};

struct Checkpoint {
  int64_t epoch = 0;
  int64_t step = 0;
  std::vector<uint64_t> rng_state;
  std::string config_text;  // effective config, YAML or JSON, UTF-8
  std::vector<CheckpointBlob> blobs;
  std::string source;  // the file it was read from (names it in lookup errors); not stored

  // Copies `bytes` bytes; they must equal numel(shape) * dtype_size(dtype) and the name
  // must be new (runtime error otherwise: a programming mistake, not bad data).
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data,
           size_t bytes);
  void add(const std::string& name, const Tensor& host_tensor);

  const CheckpointBlob* find(const std::string& name) const;  // nullptr if absent
  // The blob, checked to have this dtype and shape; data error naming the file otherwise
  // (a checkpoint that does not fit the model it is loaded into).
  const CheckpointBlob& get(const std::string& name, DType dtype,
                            const std::vector<int64_t>& shape) const;
};

// Writes `<path>.tmp.<pid>`, fsyncs it, renames it over `path` and fsyncs the folder, so
// `path` holds either the old checkpoint or the complete new one. An I/O failure is a
// runtime error naming the file; the temp file is removed and `path` is left untouched.
void write_checkpoint(const std::string& path, const Checkpoint& ckpt);

// Any problem with the file (missing, truncated, bad magic, unsupported version, checksum
// mismatch, sizes that do not add up) is a data error "<path>: <what is wrong>".
Checkpoint read_checkpoint(const std::string& path);

// FNV-1a 64-bit, exposed for tests.
uint64_t fnv1a64(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace depbloom
