// The datasets `depbloom-data get` knows, each from its publisher's own location (docs/data.md
// cites them), and the JSON form of the same table that DEPBLOOM_DATASETS may name instead.
#include "datasets.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "depbloom/core/error.h"

namespace depbloom::tools {
namespace {

const char* const kJodie = "JODIE (Stanford SNAP group), snap.stanford.edu/jodie";
const char* const kJodiePaper =
    "Kumar, Zhang, Leskovec: Predicting Dynamic Embedding Trajectory in Temporal Interaction "
    "Networks, KDD 2019";
const char* const kJodieHeader = "user_id,item_id,timestamp,state_label";
const char* const kSnap = "SNAP, snap.stanford.edu/data";
const char* const kMotifs = "Paranjape, Benson, Leskovec: Motifs in Temporal Networks, WSDM 2017";
const char* const kTgb = "TGB, tgb.complexdatalab.com (TGB's tgb/utils/info.py)";
const char* const kTgbPaper =
    "Huang et al.: Temporal Graph Benchmark for Machine Learning on Temporal Graphs, NeurIPS "
    "2023";
const char* const kNone = "none stated";

Dataset jodie(const char* name, const char* size, int64_t events, const char* config) {
  Dataset d;
  d.name = name;
  d.url = fmt::format("http://snap.stanford.edu/jodie/{}.csv", name);
  d.file = fmt::format("{}.csv", name);
  d.format = "jodie";
  d.publisher = kJodie;
  d.paper = kJodiePaper;
  d.licence = kNone;
  d.size = size;
  d.header = kJodieHeader;
  d.events = events;
  d.config = config;
  return d;
}

Dataset snap(const char* name, const char* file, const char* size, int64_t events,
             const char* paper) {
  Dataset d;
  d.name = name;
  d.url = fmt::format("https://snap.stanford.edu/data/{}.gz", file);
  d.unpack = "gz";
  d.file = file;
  d.format = "snap";
  d.publisher = kSnap;
  d.paper = paper;
  d.licence = kNone;
  d.size = size;
  d.events = events;
  return d;
}

Dataset tgb(const char* name, const char* zip, const char* file, int64_t edges = 0) {
  Dataset d;
  d.name = name;
  d.url = fmt::format("https://object-arbutus.cloud.computecanada.ca/tgb/{}", zip);
  d.unpack = "zip";
  d.file = file;
  d.publisher = kTgb;
  d.paper = kTgbPaper;
  d.licence = "stated on TGB's site (not checked here)";
  d.size = "unknown";
  d.events = edges;
  return d;
}

std::vector<Dataset> builtin_table() {
  std::vector<Dataset> t;
  // JODIE's four: edge features and state labels in the CSV (JODIE's page gives no sizes).
  t.push_back(jodie("wikipedia", "~0.3 GB", 157474, "configs/tgn-wiki.yaml"));
  t.back().name = "wiki";
  t.push_back(jodie("reddit", "~1.2 GB", 672447, "configs/tgn-reddit.yaml"));
  t.push_back(jodie("mooc", "~0.04 GB", 411749, "configs/tgn-mooc.yaml"));
  t.push_back(jodie("lastfm", "~0.04 GB", 1293103, "configs/tgn-lastfm.yaml"));
  t.push_back(snap("wikitalk", "wiki-talk-temporal.txt", "~0.06 GB", 7833140, kMotifs));
  t.back().config = "configs/tgn-wikitalk.yaml";
  t.push_back(snap("collegemsg", "CollegeMsg.txt", "~0.4 MB", 59835,
                   "Panzarasa, Opsahl, Carley: Patterns and dynamics of users' behavior and "
                   "interaction: Network analysis of an online community, JASIST 2009"));
  t.back().config = "configs/tgn-collegemsg.yaml";
  t.push_back(snap("sx-superuser", "sx-superuser.txt", "~13 MB", 1443339, kMotifs));
  t.push_back(snap("sx-askubuntu", "sx-askubuntu.txt", "~9 MB", 964437, kMotifs));
  t.push_back(
      snap("email-eu-core-temporal", "email-Eu-core-temporal.txt", "~1.3 MB", 332334, kMotifs));
  Dataset uc;
  uc.name = "konect-ucsocial";
  uc.url = "http://konect.cc/files/download.tsv.opsahl-ucsocial.tar.bz2";
  uc.unpack = "tar.bz2";
  uc.file = "opsahl-ucsocial/out.opsahl-ucsocial";
  uc.format = "konect";
  uc.publisher = "KONECT, konect.cc/networks/opsahl-ucsocial";
  uc.paper = "Kunegis: KONECT, the Koblenz Network Collection, WWW 2013 Companion";
  uc.licence = "CC BY-SA 2.0 DE (KONECT's README)";
  uc.size = "~0.3 MB";
  uc.header = "%";
  uc.events = 59835;
  t.push_back(uc);
  // The signed-rating stream beside the loaders' KONECT fixture (../shared/data has a copy).
  Dataset otc = uc;
  otc.name = "konect-bitcoinotc";
  otc.url = "http://konect.cc/files/download.tsv.soc-sign-bitcoinotc.tar.bz2";
  otc.file = "soc-sign-bitcoinotc/out.soc-sign-bitcoinotc";
  otc.publisher = "KONECT, konect.cc/networks/soc-sign-bitcoinotc";
  otc.paper =
      "Kumar, Spezzano, Subrahmanian, Faloutsos: Edge Weight Prediction in Weighted Signed "
      "Networks, ICDM 2016";
  otc.licence = kNone;  // its KONECT README states none
  otc.size = "~1 MB";
  otc.events = 35592;
  t.push_back(otc);
  // TGB's link-prediction sets: the edge list and the fixed negatives (pickles) in one zip.
  // tgbl-wiki is JODIE's WIKI stream (157,474 edges in TGB's paper and in JODIE's file); the
  // others' edge counts are left unchecked: that TGB's v2 files hold exactly the paper's
  // counts could not be verified here.
  t.push_back(tgb("tgbl-wiki", "tgbl-wiki-v2.zip", "tgbl-wiki_edgelist_v2.csv", 157474));
  t.back().config = "configs/tgn-tgbl-wiki.yaml";
  t.push_back(tgb("tgbl-review", "tgbl-review-v2.zip", "tgbl-review_edgelist_v2.csv"));
  t.push_back(tgb("tgbl-coin", "tgbl-coin-v2.zip", "tgbl-coin_edgelist_v2.csv"));
  t.push_back(tgb("tgbl-comment", "tgbl-comment.zip", "tgbl-comment_edgelist.csv"));
  t.push_back(tgb("tgbl-flight", "tgbl-flight-v2.zip", "tgbl-flight_edgelist_v2.csv"));
  return t;
}

// Reads a table in the built-in table's fields; `name`, `url` and `file` are required.
std::vector<Dataset> json_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) DB_THROW(config, "DEPBLOOM_DATASETS: cannot read {}", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    DB_THROW(config, "{}: not a JSON list of datasets: {}", path, e.what());
  }
  std::vector<Dataset> t;
  try {
    for (const auto& e : j) {
      Dataset d;
      d.name = e.at("name").get<std::string>();
      d.url = e.at("url").get<std::string>();
      d.file = e.at("file").get<std::string>();
      d.unpack = e.value("unpack", "");
      d.format = e.value("format", "");
      d.publisher = e.value("publisher", "");
      d.paper = e.value("paper", "");
      d.licence = e.value("licence", kNone);
      d.size = e.value("size", "unknown");
      d.bytes = e.value("bytes", int64_t{0});
      d.sha256 = e.value("sha256", "");
      d.header = e.value("header", "");
      d.events = e.value("events", int64_t{0});
      d.config = e.value("config", "");
      t.push_back(d);
    }
  } catch (const nlohmann::json::exception& e) {
    DB_THROW(config, "{}: dataset {}: {}", path, t.size(), e.what());
  }
  return t;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const std::vector<Dataset>& dataset_table() {
  static const std::vector<Dataset> table = [] {
    const char* path = std::getenv("DEPBLOOM_DATASETS");
    return path != nullptr && *path != '\0' ? json_table(path) : builtin_table();
  }();
  return table;
}

const Dataset& find_dataset(const std::string& name) {
  const std::vector<Dataset>& t = dataset_table();
  auto it =
      std::find_if(t.begin(), t.end(), [&](const Dataset& d) { return d.name == lower(name); });
  if (it != t.end()) return *it;
  std::vector<std::string> names;
  for (const Dataset& d : t) names.push_back(d.name);
  DB_THROW(usage, "unknown dataset '{}'; known: {}", name, fmt::join(names, ", "));
}

}  // namespace depbloom::tools
