// depbloom-data output: statistics as JSON, synthetic-versus-target tables, CSV writing.
#include "report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"

namespace depbloom::tools {
namespace {

using nlohmann::json;

json quantiles_json(const data::CountQuantiles& q) {
  return json{{"nodes", q.count}, {"mean", q.mean}, {"min", q.min}, {"p25", q.p25}, {"p50", q.p50},
              {"p75", q.p75},     {"p90", q.p90},   {"p99", q.p99}, {"max", q.max}};
}

struct Row {
  const char* name;
  double target;
  double measured;
};

// The rows a shape has a target for (a target of 0 means none was published).
std::vector<Row> rows_of(const data::StreamStats& s, const data::SynthTargets& t) {
  std::vector<Row> all = {
      {"nodes", static_cast<double>(t.num_nodes), static_cast<double>(s.active_nodes)},
      {"users", static_cast<double>(t.num_users), static_cast<double>(s.num_users)},
      {"items", static_cast<double>(t.num_items), static_cast<double>(s.num_items)},
      {"events", static_cast<double>(t.num_events), static_cast<double>(s.num_events)},
      {"span_days", t.span_days, s.span_days},
      {"repeat_fraction", t.repeat_fraction, s.repeat_fraction},
      {"repeat_last1_share", t.repeat_last1_share, s.repeat_last1_share},
      {"repeat_last5_share", t.repeat_last5_share, s.repeat_last5_share},
      {"activity_median", t.activity_median, static_cast<double>(s.activity.p50)},
      {"activity_one_share", t.activity_one_share, s.activity_one_share},
      {"activity_top1pct_share", t.activity_top1pct_share, s.activity_top1pct_share},
      {"min_item_degree", t.min_item_degree, static_cast<double>(s.popularity.min)},
      {"degree_alpha", t.degree_alpha, s.degree_power_law.alpha},
  };
  std::vector<Row> rows;
  for (const Row& r : all)
    if (r.target != 0.0) rows.push_back(r);
  return rows;
}

double relative_error(const Row& r) {
  return std::abs(r.measured - r.target) / std::abs(r.target);
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};

}  // namespace

json stats_json(const data::StreamStats& s) {
  const data::PowerLawFit& p = s.degree_power_law;
  return json{{"num_nodes", s.num_nodes},
              {"active_nodes", s.active_nodes},
              {"num_events", s.num_events},
              {"bipartite", s.bipartite},
              {"num_users", s.num_users},
              {"num_items", s.num_items},
              {"t_min", s.t_min},
              {"t_max", s.t_max},
              {"span_days", s.span_days},
              {"ties", s.ties},
              {"self_loops", s.self_loops},
              {"distinct_pairs", s.distinct_pairs},
              {"repeat_fraction", s.repeat_fraction},
              {"repeat_last1_share", s.repeat_last1_share},
              {"repeat_last5_share", s.repeat_last5_share},
              {"degree", quantiles_json(s.degree)},
              {"activity", quantiles_json(s.activity)},
              {"activity_one_share", s.activity_one_share},
              {"activity_top1pct_share", s.activity_top1pct_share},
              {"popularity", quantiles_json(s.popularity)},
              {"degree_power_law",
               {{"alpha", p.alpha},
                {"alpha_se", p.alpha_se},
                {"x_min", p.x_min},
                {"ks", p.ks},
                {"n_tail", p.n_tail}}}};
}

std::string target_table(const data::StreamStats& s, const data::SynthTargets& t) {
  std::string out = fmt::format("{:<24} {:>14} {:>14} {:>8}  within 10%\n", "statistic", "target",
                                "measured", "error");
  for (const Row& r : rows_of(s, t)) {
    const double err = relative_error(r);
    out += fmt::format("{:<24} {:>14.4g} {:>14.4g} {:>7.1f}%  {}\n", r.name, r.target, r.measured,
                       100.0 * err, err <= 0.10 ? "yes" : "NO");
  }
  return out;
}

json target_json(const data::StreamStats& s, const data::SynthTargets& t) {
  json out = json::object();
  for (const Row& r : rows_of(s, t)) {
    const double err = relative_error(r);
    out[r.name] = {{"target", r.target},
                   {"measured", r.measured},
                   {"relative_error", err},
                   {"within_10pct", err <= 0.10}};
  }
  return out;
}

std::string write_csv(const data::EventStream& s, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) DB_THROW(data, "{}: cannot create the folder: {}", dir, ec.message());
  const bool jodie = s.bipartite;
  const std::string path = jodie ? fmt::format("{}/{}.csv", dir, s.name) : dir + "/edges.csv";
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) DB_THROW(data, "{}: cannot open for writing", path);
  fmt::memory_buffer buf;
  auto flush = [&] {
    if (std::fwrite(buf.data(), 1, buf.size(), file.get()) != buf.size())
      DB_THROW(data, "{}: write failed (disk full?)", path);
    buf.clear();
  };
  // JODIE rows carry the features; TGL keeps them in edge_features.npy beside edges.csv.
  if (jodie)
    fmt::format_to(std::back_inserter(buf),
                   "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n");
  else
    fmt::format_to(std::back_inserter(buf), "src,dst,time\n");
  const int64_t item_base = jodie ? s.num_users : 0;
  for (int64_t e = 0; e < s.num_events(); ++e) {
    const int label = s.label.empty() ? 0 : s.label[e];
    if (jodie)
      fmt::format_to(std::back_inserter(buf), "{},{},{},{}", s.src[e], s.dst[e] - item_base,
                     s.ts[e], label);
    else
      fmt::format_to(std::back_inserter(buf), "{},{},{}", s.src[e], s.dst[e], s.ts[e]);
    if (jodie) {
      const float* row = s.edge_feat.data() + e * s.edge_dim;
      for (int64_t f = 0; f < s.edge_dim; ++f)
        fmt::format_to(std::back_inserter(buf), ",{}", row[f]);
    }
    buf.push_back('\n');
    if (buf.size() > (1 << 20)) flush();
  }
  flush();
  if (std::fclose(file.release()) != 0) DB_THROW(data, "{}: write failed on close", path);
  if (!jodie && s.edge_dim > 0)
    data::write_npy(dir + "/edge_features.npy", data::NpyDtype::f4, {s.num_events(), s.edge_dim},
                    s.edge_feat.data());
  return path;
}

}  // namespace depbloom::tools
