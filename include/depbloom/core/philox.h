// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11). A draw is a pure
// function of (seed, purpose, epoch, global index, lane), never of thread, rank or call
// order, and the same code runs on the host and in CUDA kernels, so the CPU and GPU draw
// identical numbers and any partitioning of the work draws the same ones.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DB_HOST_DEVICE inline
#endif

namespace depbloom {

// What a stream of draws is for; part of the key so that purposes never share numbers.
enum class RngPurpose : uint32_t {
  init = 1,
  negative_train = 2,
  negative_eval = 3,
  dropout = 4,
  neighbour_uniform = 5,
  new_nodes = 6,
  synth = 7,
  coherence = 8,
  classify = 9,           // node classification's mini-batch shuffles
  classify_dropout = 10,  // the node classifier's dropout, plus its layer << 8
  test = 99,
};

struct RngKey {
  uint64_t seed = 0;
  uint32_t purpose = 0;  // RngPurpose, or a purpose plus a layer id << 8
  uint32_t epoch = 0;
};

struct Philox4 {
  uint32_t v[4];
};

DB_HOST_DEVICE void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Philox4x32 with 10 rounds. counter: 4 words; key: 2 words.
DB_HOST_DEVICE Philox4 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                  uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0;
    uint32_t n1 = lo1;
    uint32_t n2 = hi0 ^ c3 ^ k1;
    uint32_t n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Four 32-bit draws for (key, index, lane).
DB_HOST_DEVICE Philox4 philox_draw(const RngKey& key, uint64_t index, uint32_t lane) {
  // The seed's two halves are mixed with the purpose into the key; epoch and lane fill the
  // counter beside the 64-bit index.
  uint32_t k0 = static_cast<uint32_t>(key.seed) ^ (key.purpose * 0x85EBCA6Bu);
  uint32_t k1 = static_cast<uint32_t>(key.seed >> 32) ^ (key.purpose * 0xC2B2AE35u + 0x27D4EB2Fu);
  return philox4x32(static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), lane,
                    key.epoch, k0, k1);
}

DB_HOST_DEVICE uint32_t philox_u32(const RngKey& key, uint64_t index, uint32_t lane) {
  return philox_draw(key, index, lane).v[0];
}

// splitmix64's finaliser: spreads a key (a node, a time's bits, an event) over the 64-bit
// index space.
DB_HOST_DEVICE uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform float in [0, 1) with 24 random bits: exact in float on every device.
DB_HOST_DEVICE float uniform_float(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Uniform double in [0, 1) with 53 random bits from two words.
DB_HOST_DEVICE double uniform_double(uint32_t a, uint32_t b) {
  uint64_t x = (static_cast<uint64_t>(a) << 21) ^ static_cast<uint64_t>(b >> 11);
  return static_cast<double>(x & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// Uniform integer in [0, n) by the multiply-shift method (bias below 2^-32 * n).
DB_HOST_DEVICE uint32_t uniform_below(uint32_t bits, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * n) >> 32);
}

}  // namespace depbloom
