// .npy header parser and writer, and NpyArray's converting copies. The header is a Python
// dict literal; this parses the small subset NumPy writes (three keys, strings, booleans,
// tuples of integers) and rejects everything else with the byte where it stopped.
#include "depbloom/data/npy.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "depbloom/core/error.h"

namespace depbloom::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlign = 64;  // NumPy >= 1.14 aligns the data to 64 bytes

// Reads the header dict (the text between the prefix and the data).
class HeaderDictParser {
 public:
  HeaderDictParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader header;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') DB_THROW(data, "{}: structured dtypes are not supported", name_);
        header.dtype = dtype_of(parse_string());
        have_descr = true;
      } else if (key == "fortran_order") {
        if (parse_bool()) {
          DB_THROW(data,
                   "{}: Fortran-order arrays are not supported; save with "
                   "np.ascontiguousarray(a)",
                   name_);
        }
        have_order = true;
      } else if (key == "shape") {
        header.shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail("text after the closing '}'");
    if (!have_descr || !have_order || !have_shape) {
      fail("the header needs the keys 'descr', 'fortran_order' and 'shape'");
    }
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string_view near = text_.substr(std::min(pos_, text_.size()), 24);
    std::string shown;
    for (char c : near) shown += (c >= 32 && c < 127) ? c : '?';
    DB_THROW(data, "{}: malformed .npy header at byte {}: {} (near `{}`)", name_, pos_, what,
             shown);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') break;
      int64_t dim = 0;
      size_t digits = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (dim > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
        dim = dim * 10 + (peek() - '0');
        ++pos_;
        ++digits;
      }
      if (digits == 0) fail("expected a non-negative dimension");
      if (peek() == 'L') ++pos_;  // Python 2 long literals in files written by NumPy on py2
      shape.push_back(dim);
      if (shape.size() > 32) fail("more than 32 dimensions");
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++pos_;
    return shape;
  }
  NpyDtype dtype_of(const std::string& descr) const {
    if (descr.size() == 3 && (descr[0] == '|' || descr[0] == '<' || descr[0] == '=')) {
      std::string_view kind(descr.data() + 1, 2);
      if (kind == "u1") return NpyDtype::u1;
      if (kind == "i1") return NpyDtype::i1;
      if (descr[0] == '<') {
        if (kind == "f4") return NpyDtype::f4;
        if (kind == "f8") return NpyDtype::f8;
        if (kind == "i4") return NpyDtype::i4;
        if (kind == "i8") return NpyDtype::i8;
      }
    }
    if (!descr.empty() && descr[0] == '>') {
      DB_THROW(data, "{}: big-endian dtype '{}' is not supported; convert with a.astype('<{}')",
               name_, descr, descr.substr(1));
    }
    DB_THROW(data, "{}: unsupported dtype '{}' (need <f4, <f8, <i4, <i8, |u1 or |i1)", name_,
             descr);
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

uint32_t read_le(const char* p, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

template <typename From, typename To>
void convert_checked(const char* src, int64_t count, To* out, const std::string& name) {
  if constexpr (std::is_same_v<From, To>) {
    if (count > 0) std::memcpy(out, src, static_cast<size_t>(count) * sizeof(To));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
      // Every supported integer dtype fits int64, so compare there.
      const int64_t wide = static_cast<int64_t>(v);
      if (wide < static_cast<int64_t>(std::numeric_limits<To>::min()) ||
          wide > static_cast<int64_t>(std::numeric_limits<To>::max())) {
        DB_THROW(data, "{}: element {} = {} does not fit the {}-bit integers it is read as", name,
                 i, static_cast<int64_t>(v), 8 * sizeof(To));
      }
    }
    out[i] = static_cast<To>(v);
  }
}

template <typename To>
std::vector<To> copy_as(const NpyArray& a, bool integer_target) {
  std::vector<To> out(static_cast<size_t>(a.count()));
  const char* src = a.data();
  const int64_t n = a.count();
  switch (a.dtype()) {
    case NpyDtype::f4:
    case NpyDtype::f8:
      if (integer_target) {
        DB_THROW(data, "{}: dtype '{}' where integers were expected", a.name(),
                 npy_descr(a.dtype()));
      }
      if (a.dtype() == NpyDtype::f4) {
        convert_checked<float>(src, n, out.data(), a.name());
      } else {
        convert_checked<double>(src, n, out.data(), a.name());
      }
      return out;
    case NpyDtype::i4:
      if (!integer_target) break;
      convert_checked<int32_t>(src, n, out.data(), a.name());
      return out;
    case NpyDtype::i8:
      if (!integer_target) break;
      convert_checked<int64_t>(src, n, out.data(), a.name());
      return out;
    case NpyDtype::u1:
      if (!integer_target) break;
      convert_checked<uint8_t>(src, n, out.data(), a.name());
      return out;
    case NpyDtype::i1:
      if (!integer_target) break;
      convert_checked<int8_t>(src, n, out.data(), a.name());
      return out;
  }
  DB_THROW(data, "{}: dtype '{}' where floats (<f4 or <f8) were expected", a.name(),
           npy_descr(a.dtype()));
}

}  // namespace

const char* npy_descr(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::f4:
      return "<f4";
    case NpyDtype::f8:
      return "<f8";
    case NpyDtype::i4:
      return "<i4";
    case NpyDtype::i8:
      return "<i8";
    case NpyDtype::u1:
      return "|u1";
    case NpyDtype::i1:
      return "|i1";
  }
  return "?";
}

size_t npy_item_size(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::f4:
    case NpyDtype::i4:
      return 4;
    case NpyDtype::f8:
    case NpyDtype::i8:
      return 8;
    case NpyDtype::u1:
    case NpyDtype::i1:
      return 1;
  }
  return 1;
}

NpyHeader parse_npy_header(const char* bytes, size_t size, const std::string& name) {
  if (size < kMagicSize || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    DB_THROW(data, "{}: not a .npy file (the magic string \\x93NUMPY is missing)", name);
  }
  if (size < 10) DB_THROW(data, "{}: truncated .npy header ({} bytes in all)", name, size);
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if ((major != 1 && major != 2) || minor != 0) {
    DB_THROW(data, "{}: unsupported .npy version {}.{} (1.0 and 2.0 are read)", name, major, minor);
  }
  const size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) DB_THROW(data, "{}: truncated .npy header ({} bytes in all)", name, size);
  const size_t header_len = read_le(bytes + 8, major == 1 ? 2 : 4);
  if (header_len > size - prefix) {
    DB_THROW(data,
             "{}: truncated .npy header: it announces {} bytes, the file has {} after "
             "the prefix",
             name, header_len, size - prefix);
  }
  NpyHeader header = HeaderDictParser(std::string_view(bytes + prefix, header_len), name).parse();
  header.data_offset = prefix + header_len;
  const uint64_t item = npy_item_size(header.dtype);
  uint64_t count = 1;
  for (int64_t dim : header.shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count) ||
        count > (uint64_t{1} << 62) / item) {
      DB_THROW(data, "{}: the .npy shape has too many elements", name);
    }
  }
  header.count = static_cast<int64_t>(count);
  const size_t have = size - header.data_offset;
  if (have < header.data_bytes()) {
    DB_THROW(data, "{}: truncated .npy data: the header announces {} bytes, the file holds {}",
             name, header.data_bytes(), have);
  }
  if (have > header.data_bytes()) {
    DB_THROW(data, "{}: {} unexpected bytes after the .npy array data", name,
             have - header.data_bytes());
  }
  return header;
}

std::string npy_header_bytes(NpyDtype dtype, const std::vector<int64_t>& shape) {
  std::string dict =
      std::string("{'descr': '") + npy_descr(dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += shape.size() == 1 ? "," : ", ";
  }
  dict += "), }";
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  if (total - prefix > 65535) {
    prefix = 12;
    total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  }
  const size_t header_len = total - prefix;
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

NpyArray NpyArray::open(const std::string& path, int dir_fd) {
  NpyArray a;
  a.file_ = MappedFile(path, dir_fd);
  a.name_ = path;
  a.bytes_ = a.file_.data();
  a.header_ = parse_npy_header(a.file_.data(), a.file_.size(), path);
  return a;
}

NpyArray NpyArray::view(const char* bytes, size_t size, const std::string& name) {
  NpyArray a;
  a.name_ = name;
  a.bytes_ = bytes;
  a.header_ = parse_npy_header(bytes, size, name);
  return a;
}

int64_t NpyArray::row_width() const {
  int64_t width = 1;
  for (size_t i = 1; i < header_.shape.size(); ++i) width *= header_.shape[i];
  return width;
}

void NpyArray::expect_ndim(size_t ndim, const char* what) const {
  if (header_.shape.size() != ndim) {
    DB_THROW(data, "{}: {} must be a {}-d array, this one has shape ({})", name_, what, ndim,
             fmt::join(header_.shape, ", "));
  }
}

std::vector<float> NpyArray::to_float32() const {
  return copy_as<float>(*this, false);
}
std::vector<double> NpyArray::to_float64() const {
  return copy_as<double>(*this, false);
}
std::vector<int32_t> NpyArray::to_int32() const {
  return copy_as<int32_t>(*this, true);
}
std::vector<int64_t> NpyArray::to_int64() const {
  return copy_as<int64_t>(*this, true);
}
std::vector<int8_t> NpyArray::to_int8() const {
  return copy_as<int8_t>(*this, true);
}

void write_npy(const std::string& path, NpyDtype dtype, const std::vector<int64_t>& shape,
               const void* data) {
  size_t count = 1;
  for (int64_t dim : shape) count *= static_cast<size_t>(dim);
  const std::string header = npy_header_bytes(dtype, shape);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) DB_THROW(data, "{}: cannot create: {}", path, std::strerror(errno));
  const size_t bytes = count * npy_item_size(dtype);
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  if (ok && bytes > 0) ok = std::fwrite(data, 1, bytes, f) == bytes;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) DB_THROW(data, "{}: cannot write: {}", path, std::strerror(errno));
}

}  // namespace depbloom::data
