// The SHA-256 of a file as lower-case hex (OpenSSL), for the manifests that name what they
// were made from (depbloom-embed's checkpoint, depbloom-data's downloads).
#pragma once

#include <string>

namespace depbloom::cli {

// A runtime error naming the file when it cannot be read.
std::string file_sha256(const std::string& path);

}  // namespace depbloom::cli
