// libFuzzer target: the input as a .npy file. Parsing either fails with a depbloom::Error
// or gives a header whose data fits the input; every conversion then either fails with an
// Error or copies; and the header rewritten by npy_header_bytes parses back the same.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"

namespace {

using depbloom::data::NpyArray;

template <typename Convert>
void try_convert(Convert convert) {
  try {
    convert();
  } catch (const depbloom::Error&) {
  }
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_npy finding: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  NpyArray a;
  try {
    a = NpyArray::view(bytes, size, "fuzz.npy");
  } catch (const depbloom::Error&) {
    return 0;
  }
  const auto& h = a.header();
  if (h.data_offset + h.data_bytes() != size) finding("header and file size disagree");
  try_convert([&] { return a.to_float32(); });
  try_convert([&] { return a.to_float64(); });
  try_convert([&] { return a.to_int32(); });
  try_convert([&] { return a.to_int64(); });
  try_convert([&] { return a.to_int8(); });
  // Round trip through the writer's header.
  std::string again = depbloom::data::npy_header_bytes(h.dtype, h.shape);
  again.append(a.data(), h.data_bytes());
  try {
    NpyArray b = NpyArray::view(again.data(), again.size(), "again.npy");
    if (b.dtype() != a.dtype() || b.shape() != a.shape()) finding("round trip changed the header");
    if (b.header().data_offset % 64 != 0) finding("written header is not 64-byte aligned");
  } catch (const depbloom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("a written header does not parse");
  }
  return 0;
}
