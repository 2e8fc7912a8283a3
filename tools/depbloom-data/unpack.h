// Unpacks a verified download into a staging folder: a plain file is moved, gzip is inflated
// with zlib, zip and tar.bz2 archives are extracted by Debian's python3 (its zipfile and
// tarfile modules), so no archive library is needed.
#pragma once

#include <filesystem>
#include <string>

namespace depbloom::tools {

// Writes `download`'s content under `stage` as `file` (plain, gz) or as the archive's tree
// (zip, tar.bz2). `what` names the download in messages (its URL or --from file); a corrupt
// download is a data error (exit 3).
void unpack(const std::filesystem::path& download, const std::string& kind,
            const std::filesystem::path& stage, const std::string& file, const std::string& what);

}  // namespace depbloom::tools
