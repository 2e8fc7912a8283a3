// .npy reader and writer: round trips of every supported dtype, the header layouts NumPy
// writes (1.0 with 16- or 64-byte alignment, 2.0, Python 2 long dims), and the corpus of
// truncated or unsupported files, each with its message.
#include <gtest/gtest.h>

#include <cstring>

#include "data_test_util.h"
#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"

namespace depbloom::data::testing {
namespace {

// A .npy file from a header dict and raw data, padded to `align` bytes like NumPy does.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1,
                     size_t align = 64) {
  const size_t prefix = major == 1 ? 10 : 12;
  const size_t total = (prefix + dict.size() + 1 + align - 1) / align * align;
  const size_t len = total - prefix;
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xFF);
  out += dict + std::string(len - dict.size() - 1, ' ') + "\n";
  return out + data;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(Npy, RoundTripsEverySupportedDtype) {
  TempDir dir;
  const std::vector<float> f4 = {1.5f, -2, 3e10f, 0, 7, 8};
  const std::vector<double> f8 = {0.1, -1e300};
  const std::vector<int32_t> i4 = {-5, 2147483647};
  const std::vector<int64_t> i8 = {-1, int64_t{1} << 40, 3};
  const std::vector<uint8_t> u1 = {0, 255};
  const std::vector<int8_t> i1 = {-128, 127, 0};
  write_npy(dir.file("f4.npy"), NpyDtype::f4, {3, 2}, f4.data());
  write_npy(dir.file("f8.npy"), NpyDtype::f8, {2}, f8.data());
  write_npy(dir.file("i4.npy"), NpyDtype::i4, {2}, i4.data());
  write_npy(dir.file("i8.npy"), NpyDtype::i8, {3, 1}, i8.data());
  write_npy(dir.file("u1.npy"), NpyDtype::u1, {2}, u1.data());
  write_npy(dir.file("i1.npy"), NpyDtype::i1, {3}, i1.data());
  NpyArray a = NpyArray::open(dir.file("f4.npy"));
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.row_width(), 2);
  EXPECT_EQ(a.to_float32(), f4);
  EXPECT_EQ(NpyArray::open(dir.file("f8.npy")).to_float64(), f8);
  EXPECT_EQ(NpyArray::open(dir.file("f8.npy")).to_float32(),
            (std::vector<float>{0.1f, -std::numeric_limits<float>::infinity()}));
  EXPECT_EQ(NpyArray::open(dir.file("i4.npy")).to_int32(), i4);
  EXPECT_EQ(NpyArray::open(dir.file("i4.npy")).to_int64(), (std::vector<int64_t>{-5, 2147483647}));
  EXPECT_EQ(NpyArray::open(dir.file("i8.npy")).to_int64(), i8);
  EXPECT_EQ(NpyArray::open(dir.file("u1.npy")).to_int32(), (std::vector<int32_t>{0, 255}));
  EXPECT_EQ(NpyArray::open(dir.file("i1.npy")).to_int8(), i1);
}

TEST(Npy, HeaderIsLaidOutAsNumpyWritesIt) {
  const std::string h = npy_header_bytes(NpyDtype::f8, {59835, 6});
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(h.find("{'descr': '<f8', 'fortran_order': False, 'shape': (59835, 6), }"), 10u);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(npy_header_bytes(NpyDtype::i4, {5}).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(npy_header_bytes(NpyDtype::u1, {}).find("'descr': '|u1'"), std::string::npos);
  EXPECT_NE(npy_header_bytes(NpyDtype::u1, {}).find("'shape': (), }"), std::string::npos);
}

TEST(Npy, ReadsOlderAndWiderHeaders) {
  const std::vector<double> v = {1, 2, 3, 4};
  // NumPy before 1.14 aligned to 16 bytes; version 2.0 has a 4-byte length; Python 2 wrote 2L.
  const std::string variants[] = {
      make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", bytes_of(v), 1, 16),
      make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", bytes_of(v), 2),
      make_npy("{'descr':'<f8','fortran_order':False,'shape':(2L,2L)}", bytes_of(v)),
      make_npy("{\"shape\": (2, 2), \"fortran_order\": False, \"descr\": \"<f8\"}", bytes_of(v))};
  for (const std::string& bytes : variants) {
    NpyArray a = NpyArray::view(bytes.data(), bytes.size(), "v.npy");
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(a.to_float64(), v);
  }
  NpyArray fixture = NpyArray::open(kFixtures + "/tgn/ml_tiny.npy");
  EXPECT_EQ(fixture.dtype(), NpyDtype::f8);
  EXPECT_EQ(fixture.shape(), (std::vector<int64_t>{7, 2}));
}

struct BadNpy {
  const char* name;
  std::string bytes;
  const char* expected;
};

const std::string kF8x2(16, '\0');
const char* const kGood = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";

const BadNpy kBadNpy[] = {
    {"Empty", "", "not a .npy file (the magic string \\x93NUMPY is missing)"},
    {"NotNpy", "PK\x03\x04 zip file", "not a .npy file"},
    {"TruncatedPrefix", std::string("\x93NUMPY\x01\x00", 8),
     "truncated .npy header (8 bytes in all)"},
    {"Version3", make_npy(kGood, kF8x2).replace(6, 1, "\x03"), "unsupported .npy version 3.0"},
    {"HeaderBeyondFile", make_npy(kGood, kF8x2).substr(0, 40),
     "truncated .npy header: it announces"},
    {"FortranOrder", make_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", kF8x2),
     "Fortran-order arrays are not supported; save with np.ascontiguousarray(a)"},
    {"BigEndian", make_npy("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", kF8x2),
     "big-endian dtype '>f8' is not supported"},
    {"Complex", make_npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", kF8x2),
     "unsupported dtype '<c16' (need <f4, <f8, <i4, <i8, |u1 or |i1)"},
    {"Structured",
     make_npy("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", kF8x2),
     "structured dtypes are not supported"},
    {"MissingShape", make_npy("{'descr': '<f8', 'fortran_order': False, }", kF8x2),
     "needs the keys 'descr', 'fortran_order' and 'shape'"},
    {"UnknownKey", make_npy("{'descr': '<f8', 'foo': 1, }", kF8x2), "unexpected key 'foo'"},
    {"BadShape", make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }", kF8x2),
     "malformed .npy header at byte 54: expected a non-negative dimension (near `x), }"},
    {"NegativeDim", make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", kF8x2),
     "expected a non-negative dimension"},
    {"HugeShape",
     make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
              kF8x2),
     "the .npy shape has too many elements"},
    {"TruncatedData", make_npy(kGood, kF8x2.substr(0, 12)),
     "truncated .npy data: the header announces 16 bytes, the file holds 12"},
    {"TrailingBytes", make_npy(kGood, kF8x2 + "junk"),
     "4 unexpected bytes after the .npy array data"},
    {"TextAfterDict", make_npy(std::string(kGood) + " x", kF8x2), "text after the closing '}'"},
};

class BadNpyFile : public ::testing::TestWithParam<BadNpy> {};

TEST_P(BadNpyFile, FailsWithItsDocumentedMessage) {
  const BadNpy& c = GetParam();
  try {
    NpyArray::view(c.bytes.data(), c.bytes.size(), "bad.npy");
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_EQ(e.message().rfind("bad.npy: ", 0), 0u) << e.message();
    EXPECT_NE(e.message().find(c.expected), std::string::npos)
        << "message: " << e.message() << "\nexpected: " << c.expected;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadNpyFile, ::testing::ValuesIn(kBadNpy),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Npy, ConversionsRefuseValuesThatDoNotFit) {
  const std::vector<int64_t> big = {1, int64_t{1} << 40};
  const std::string i8 =
      make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", bytes_of(big));
  NpyArray a = NpyArray::view(i8.data(), i8.size(), "big.npy");
  EXPECT_EQ(a.to_int64(), big);
  try {
    a.to_int32();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("big.npy: element 1 = 1099511627776 does not fit"),
              std::string::npos)
        << e.message();
  }
  EXPECT_THROW(a.to_float32(), Error);  // integers are not features
  const std::string f4 =
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'));
  EXPECT_THROW(NpyArray::view(f4.data(), f4.size(), "f.npy").to_int64(), Error);
}

TEST(Npy, MissingFileNamesIt) {
  try {
    NpyArray::open("/nonexistent/x.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("/nonexistent/x.npy: cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace depbloom::data::testing
