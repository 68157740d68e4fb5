// A small CSV reader for hand-written job tables: comma-separated fields, double-quoted fields
// may hold commas, newlines and doubled quotes (""). Every record remembers the line it starts
// on, so errors can point at the line a person sees in their editor.
#pragma once

#include <string>
#include <vector>

namespace tl::submit {

struct CsvRecord {
  int line = 0;                     // 1-based line the record starts on
  std::vector<std::string> fields;  // unquoted fields are trimmed of surrounding blanks
};

// Splits `text` into records. Blank lines and lines whose first character is '#' are skipped.
// Throws InputError "<source>:<line>: ..." for an unterminated quote or text after a closing
// quote.
std::vector<CsvRecord> parseCsv(const std::string& text, const std::string& source);

// Quotes a field for writing when it holds a comma, a quote or a line break.
std::string csvField(const std::string& value);

// `v` with exactly `decimals` digits after the point ("%.*f"), for tables and CSV cells.
std::string fixed(double v, int decimals);

}  // namespace tl::submit
