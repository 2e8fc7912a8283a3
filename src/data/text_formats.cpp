// Column plans of the text formats. JODIE and TGN have fixed layouts, TGL names its
// columns in the header, SNAP and KONECT are blank-separated with comment lines, and the
// generic CSV takes its layout from data.columns.
#include "text_formats.h"

#include <algorithm>
#include <vector>

#include "depbloom/core/error.h"

namespace depbloom::data::detail {
namespace {

std::vector<std::string_view> header_fields(std::string_view text, const std::string& file,
                                            std::string_view& line, int64_t& line_number) {
  if (text.empty()) DB_THROW(data, "{}: the file is empty", file);
  if (!first_content_line(text, 0, line, line_number)) {
    DB_THROW(data, "{}: the file holds no events", file);
  }
  std::vector<std::string_view> fields;
  split_fields(line, ',', fields);
  return fields;
}

}  // namespace

ColumnPlan jodie_plan(std::string_view, const std::string&, const LoadOptions&) {
  ColumnPlan plan;
  plan.header = true;
  plan.label = 3;
  plan.feature_begin = 4;  // the header names fewer columns than the rows have
  plan.two_id_spaces = true;
  plan.format = "JODIE";
  return plan;
}

ColumnPlan tgn_plan(std::string_view text, const std::string& file, const LoadOptions&) {
  std::string_view line;
  int64_t line_number = 0;
  auto f = header_fields(text, file, line, line_number);
  if (f.size() != 6 || f[1] != "u" || f[2] != "i" || f[3] != "ts" || f[4] != "label" ||
      f[5] != "idx") {
    fail_at(file, line_number, line, "expected the TGN header `,u,i,ts,label,idx`");
  }
  ColumnPlan plan;
  plan.header = true;
  plan.src = 1;
  plan.dst = 2;
  plan.time = 3;
  plan.label = 4;
  plan.feature_row = 5;
  plan.fixed_fields = 6;
  plan.format = "TGN";
  return plan;
}

ColumnPlan tgl_plan(std::string_view text, const std::string& file, const LoadOptions&) {
  std::string_view line;
  int64_t line_number = 0;
  auto f = header_fields(text, file, line, line_number);
  auto column = [&](std::string_view name) {
    auto it = std::find(f.begin(), f.end(), name);
    return it == f.end() ? -1 : static_cast<int>(it - f.begin());
  };
  ColumnPlan plan;
  plan.header = true;
  plan.src = column("src");
  plan.dst = column("dst");
  plan.time = column("time");
  plan.split = column("ext_roll");
  plan.fixed_fields = static_cast<int>(f.size());
  plan.format = "TGL";
  if (plan.src < 0 || plan.dst < 0 || plan.time < 0) {
    fail_at(file, line_number, line,
            "the TGL header needs the columns src, dst and time (as in `,src,dst,time,int_roll,"
            "ext_roll`)");
  }
  return plan;
}

ColumnPlan snap_plan(std::string_view, const std::string&, const LoadOptions&) {
  ColumnPlan plan;
  plan.delimiter = ' ';
  plan.comment = '#';
  plan.fixed_fields = 3;
  plan.format = "SNAP";
  return plan;
}

ColumnPlan konect_plan(std::string_view text, const std::string& file, const LoadOptions& options) {
  ColumnPlan plan;
  plan.delimiter = ' ';
  plan.comment = '%';
  plan.format = "KONECT";
  std::string_view line;
  int64_t line_number = 0;
  if (text.empty()) DB_THROW(data, "{}: the file is empty", file);
  if (!first_content_line(text, '%', line, line_number)) {
    DB_THROW(data, "{}: the file holds no events", file);
  }
  std::vector<std::string_view> f;
  split_fields(line, ' ', f);
  if (f.size() == 3) {
    plan.fixed_fields = 3;  // src dst time
  } else if (f.size() == 4) {
    plan.fixed_fields = 4;  // src dst weight time
    plan.time = 3;
    if (options.weight_as_feature) {
      plan.feature_begin = 2;
      plan.feature_end = 3;
    }
  } else {
    fail_at(file, line_number, line,
            fmt::format("KONECT lines hold `src dst [weight] time`; found {} fields{}", f.size(),
                        f.size() < 3 ? " (no timestamp column: not a temporal network)" : ""));
  }
  return plan;
}

ColumnPlan csv_plan(std::string_view, const std::string&, const LoadOptions& options) {
  const ColumnMap& map = options.columns;
  if (map.src < 0 || map.dst < 0 || map.time < 0) {
    DB_THROW(config, "data.columns: src, dst and time need column positions (0-based)");
  }
  const int used[] = {map.src, map.dst, map.time, map.label, map.split};
  for (int a : used) {
    if (a >= 0 && map.first_feature >= 0 && a >= map.first_feature) {
      DB_THROW(config, "data.columns: column {} lies inside the features (from column {})", a,
               map.first_feature);
    }
  }
  if (map.src == map.dst || map.src == map.time || map.dst == map.time) {
    DB_THROW(config, "data.columns: src, dst and time must be different columns");
  }
  if (map.delimiter == '\0') {
    DB_THROW(config, "data.columns.delimiter: needs one character (' ' splits on runs of blanks)");
  }
  if (map.delimiter == '\n' || map.delimiter == '\r') {
    DB_THROW(config, "data.columns.delimiter: a line break cannot be the delimiter");
  }
  ColumnPlan plan;
  plan.delimiter = map.delimiter;
  plan.comment = map.comment;
  plan.header = map.header;
  plan.src = map.src;
  plan.dst = map.dst;
  plan.time = map.time;
  plan.label = map.label;
  plan.split = map.split;
  plan.feature_begin = map.first_feature;
  plan.two_id_spaces = map.bipartite;
  plan.format = "csv";
  plan.column_key_prefix = "data.columns.";
  return plan;
}

}  // namespace depbloom::data::detail
