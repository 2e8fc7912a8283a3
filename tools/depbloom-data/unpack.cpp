// Moving, inflating and extracting downloads, and hashing files.
#include "unpack.h"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "depbloom/core/error.h"

namespace depbloom::tools {
namespace {

namespace fs = std::filesystem;

void inflate_gz(const fs::path& from, const fs::path& to, const std::string& what) {
  gzFile in = gzopen(from.c_str(), "rb");
  if (in == nullptr) DB_THROW(data, "{}: cannot open {}", what, from.string());
  std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(in, gzclose);
  std::ofstream out(to, std::ios::binary);
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int n = gzread(in, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      DB_THROW(data, "{}: not a whole gzip file ({})", what, gzerror(in, &code));
    }
    if (n == 0) break;
    out.write(buf.data(), n);
  }
  if (!out.flush()) DB_THROW(runtime, "{}: cannot write ({})", to.string(), std::strerror(errno));
}

// python3 -m zipfile|tarfile -e ARCHIVE DIR, waited for; its stderr goes to ours.
void extract(const fs::path& archive, const std::string& kind, const fs::path& stage,
             const std::string& what) {
  const std::string module = kind == "zip" ? "zipfile" : "tarfile";
  const pid_t pid = fork();
  if (pid < 0) DB_THROW(runtime, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    execlp("python3", "python3", "-m", module.c_str(), "-e", archive.c_str(), stage.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    DB_THROW(runtime, "{}: python3 is needed to extract a {} archive", what, kind);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    DB_THROW(data, "{}: python3 -m {} could not extract it (not a whole {} archive?)", what, module,
             kind);
}

}  // namespace

void unpack(const fs::path& download, const std::string& kind, const fs::path& stage,
            const std::string& file, const std::string& what) {
  fs::create_directories(stage);
  const fs::path target = stage / file;
  if (kind.empty()) {
    fs::copy_file(download, target, fs::copy_options::overwrite_existing);
  } else if (kind == "gz") {
    inflate_gz(download, target, what);
  } else if (kind == "zip" || kind == "tar.bz2") {
    extract(download, kind, stage, what);
  } else {
    DB_THROW(config, "{}: unknown unpack kind '{}' (gz, zip, tar.bz2 or none)", what, kind);
  }
  if (!fs::is_regular_file(target)) DB_THROW(data, "{}: holds no {} once unpacked", what, file);
}

}  // namespace depbloom::tools
