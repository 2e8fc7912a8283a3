// `depbloom-data get` and `depbloom-data list`: fetch a known dataset (datasets.h) into
// DIR/<name>/, check it, convert it into the loaders' cache, and say how to train on it.
#pragma once

#include <string>

namespace depbloom::tools {

struct GetOptions {
  std::string name;
  std::string dir = "data";
  std::string from;  // a file placed by hand instead of the download
};

// Fetches and converts; prints the config line on stdout. Does nothing but check the
// manifest's checksum when the dataset is already here. Throws depbloom::Error: runtime
// (exit 4) for the network, data (exit 3) for a file that fails its checks.
void get_dataset(const GetOptions& options);

// One line per known dataset: name, size, whether it is in `dir`, format, publisher.
void list_datasets(const std::string& dir);

}  // namespace depbloom::tools
