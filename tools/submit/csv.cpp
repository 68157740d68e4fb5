#include "tools/submit/csv.h"

#include <cstdio>

#include "common/check.h"

namespace tl::submit {
namespace {

std::string trimBlanks(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

class CsvScanner {
 public:
  CsvScanner(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  std::vector<CsvRecord> records() {
    std::vector<CsvRecord> out;
    while (pos_ < text_.size()) {
      if (atSkippableLine()) {
        skipLine();
        continue;
      }
      out.push_back(record());
    }
    return out;
  }

 private:
  bool atSkippableLine() const {
    size_t end = text_.find('\n', pos_);
    std::string line =
        text_.substr(pos_, end == std::string::npos ? std::string::npos : end - pos_);
    std::string trimmed = trimBlanks(line);
    return trimmed.empty() || trimmed[0] == '#';
  }

  void skipLine() {
    size_t end = text_.find('\n', pos_);
    pos_ = end == std::string::npos ? text_.size() : end + 1;
    ++line_;
  }

  CsvRecord record() {
    CsvRecord r;
    r.line = line_;
    while (true) {
      r.fields.push_back(field(r.line));
      if (pos_ >= text_.size()) break;
      char c = text_[pos_++];
      if (c == '\n') {
        ++line_;
        break;
      }
      // c == ',': another field follows (possibly empty, at the end of the line)
    }
    return r;
  }

  // Reads one field and leaves pos_ at the ',' or '\n' after it (or at the end).
  std::string field(int recordLine) {
    size_t start = pos_;
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '"') return quotedField(recordLine);
    pos_ = start;
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n') {
      if (text_[pos_] == '"') {
        inputError(source_, ":", line_,
                   ": a quote inside an unquoted field (quote the whole field "
                   "and double the quote: \"a \"\"b\"\"\")");
      }
      ++pos_;
    }
    return trimBlanks(text_.substr(start, pos_ - start));
  }

  std::string quotedField(int recordLine) {
    ++pos_;  // opening quote
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) inputError(source_, ":", recordLine, ": unterminated quoted field");
      char c = text_[pos_++];
      if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] == '"') {
          value += '"';
          ++pos_;
          continue;
        }
        break;
      }
      if (c == '\n') ++line_;
      value += c;
    }
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
    if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n') {
      inputError(source_, ":", line_, ": text after a closing quote");
    }
    return value;
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<CsvRecord> parseCsv(const std::string& text, const std::string& source) {
  // Spreadsheets often save UTF-8 CSV with a byte order mark; it is not part of the header.
  const std::string bom = "\xEF\xBB\xBF";
  if (text.rfind(bom, 0) == 0) return CsvScanner(text.substr(bom.size()), source).records();
  return CsvScanner(text, source).records();
}

std::string csvField(const std::string& value) {
  if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace tl::submit
