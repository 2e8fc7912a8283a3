// One HTTP(S) download with libcurl into a `.part` file: resumes a cut download with a Range
// request, shows a progress line on a terminal, and fails at once (connect timeout) with the
// URL. It does not check what it fetched: get.cpp verifies and renames the file.
#pragma once

#include <filesystem>
#include <string>

namespace depbloom::tools {

// Appends `url`'s bytes to `part` (from its current size; a fresh file when it is absent or
// the server ignores the Range). A network or HTTP failure throws depbloom::Error (runtime,
// exit 4) whose message names the URL and ends with `hint`; `part` then holds what arrived,
// for the next call to resume.
void download(const std::string& url, const std::filesystem::path& part, const std::string& hint);

}  // namespace depbloom::tools
