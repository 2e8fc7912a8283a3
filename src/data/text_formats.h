// Internal to the data part: the ColumnPlan of each text format (reading the header where
// the format has one) and format detection from a file name and its first line.
#pragma once

#include <string>
#include <string_view>

#include "delimited.h"
#include "depbloom/data/loader.h"

namespace depbloom::data::detail {

// Parses `text` as `format` (jodie | tgn | tgl | snap | konect | csv).
RawEvents parse_text_format(std::string_view text, const std::string& file,
                            const std::string& format, const LoadOptions& options);

// The format of a file from its name, else from its first content line (`head` is the
// start of the file). Throws a data error when neither says.
DetectedFormat guess_format(const std::string& file, std::string_view head);

bool is_known_format(const std::string& format);

}  // namespace depbloom::data::detail
