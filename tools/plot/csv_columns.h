// Numeric columns of a CSV file with a header row (tl-report's input): every value of a named
// column as a number, or one InputError naming the file, line and column. Empty cells are
// missing values (NaN). Torch-free.
#pragma once

#include <string>
#include <vector>

namespace tl::plot {

class CsvColumns {
 public:
  // `text` is the file's contents; `path` names it in errors.
  CsvColumns(const std::string& text, const std::string& path);
  // The column's values, one per data row; InputError listing the columns when it is unknown.
  std::vector<double> column(const std::string& name) const;
  size_t rows() const { return cells_.size(); }

 private:
  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> cells_;
};

}  // namespace tl::plot
