#include "tools/plot/csv_columns.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/check.h"

namespace tl::plot {
namespace {

std::vector<std::string> splitRow(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

}  // namespace

CsvColumns::CsvColumns(const std::string& text, const std::string& path) : path_(path) {
  std::istringstream in(text);
  std::string line;
  int lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = splitRow(line);
    if (header_.empty()) {
      header_ = std::move(cells);
      continue;
    }
    TL_REQUIRE(cells.size() == header_.size(), path_, ":", lineNumber, ": ", cells.size(),
               " cells, but the header has ", header_.size());
    cells_.push_back(std::move(cells));
  }
  TL_REQUIRE(!header_.empty(), path_, ": no header row");
}

std::vector<double> CsvColumns::column(const std::string& name) const {
  size_t index = header_.size();
  std::string known;
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) index = i;
    known += (i ? ", " : "") + header_[i];
  }
  TL_REQUIRE(index < header_.size(), path_, ": no column '", name, "' (columns: ", known, ")");
  std::vector<double> values;
  for (size_t row = 0; row < cells_.size(); ++row) {
    const std::string& cell = cells_[row][index];
    if (cell.empty()) {
      values.push_back(std::nan(""));
      continue;
    }
    char* end = nullptr;
    const double v = std::strtod(cell.c_str(), &end);
    TL_REQUIRE(end != cell.c_str() && *end == '\0', path_, ": data row ", row + 1, ", column '",
               name, "': expected a number, got '", cell, "'");
    values.push_back(v);
  }
  return values;
}

}  // namespace tl::plot
