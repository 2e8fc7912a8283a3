// Internal to the data part: the ColumnPlan of each text format, reading the header where
// the format has one. format_table.cpp names which plan reads which format.
#pragma once

#include <string>
#include <string_view>

#include "delimited.h"
#include "depbloom/data/loader.h"

namespace depbloom::data::detail {

// Each reads `text` (all of the events file, called `file` in messages) only as far as its
// header, and `options` only where the format has settings.
ColumnPlan jodie_plan(std::string_view text, const std::string& file, const LoadOptions& options);
ColumnPlan tgn_plan(std::string_view text, const std::string& file, const LoadOptions& options);
ColumnPlan tgl_plan(std::string_view text, const std::string& file, const LoadOptions& options);
ColumnPlan snap_plan(std::string_view text, const std::string& file, const LoadOptions& options);
ColumnPlan konect_plan(std::string_view text, const std::string& file, const LoadOptions& options);
ColumnPlan csv_plan(std::string_view text, const std::string& file, const LoadOptions& options);

}  // namespace depbloom::data::detail
