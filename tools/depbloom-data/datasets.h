// The table of datasets `depbloom-data get` knows: where each is published, what it is
// called on disk, how its download is checked and how it is read. Adding a dataset is one
// entry in datasets.cpp; DEPBLOOM_DATASETS names a JSON file that replaces the table (a
// mirror, or the tests' server on 127.0.0.1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace depbloom::tools {

struct Dataset {
  std::string name;       // get's NAME (lower case)
  std::string url;        // the publisher's file
  std::string unpack;     // "" (as served), "gz", "zip" or "tar.bz2"
  std::string file;       // the events file under DIR/<name>/ once unpacked
  std::string format;     // data.format of `file`; "" when no loader reads it yet (TGB)
  std::string publisher;  // who publishes the file
  std::string paper;      // the paper to cite
  std::string licence;    // as the publisher states it, or "none stated"
  std::string size;       // the download's size, for `list` (approximate)
  int64_t bytes = 0;      // the download's exact size when known (checked), else 0
  std::string sha256;     // the publisher's checksum when published (checked), else ""
  std::string header;     // the start of the events file's first line (checked), or ""
  int64_t events = 0;     // the events the loader must find (checked), or 0
  std::string config;     // a shipped config that trains on it, or ""
};

// The table: DEPBLOOM_DATASETS's file when that is set, else the built-in entries.
const std::vector<Dataset>& dataset_table();
// The entry called `name` (case-insensitive); a usage error listing the names otherwise.
const Dataset& find_dataset(const std::string& name);

}  // namespace depbloom::tools
