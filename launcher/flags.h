// A small command-line flag parser shared by the tl tools. Flags are `--name value` or
// `--name=value`; booleans are `--name` alone. Every error names the flag and what is wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tl::launcher {

class FlagSet {
 public:
  FlagSet(std::string program, std::string summary);

  void addString(const std::string& name, std::string* target, const std::string& help);
  void addInt(const std::string& name, int64_t* target, const std::string& help, int64_t min,
              int64_t max = INT64_MAX);
  void addInt(const std::string& name, int* target, const std::string& help, int min,
              int max = INT32_MAX);
  void addDouble(const std::string& name, double* target, const std::string& help, double min,
                 double max = 1e300);
  void addBool(const std::string& name, bool* target, const std::string& help);
  void addChoice(const std::string& name, std::string* target, std::vector<std::string> choices,
                 const std::string& help);

  // Parses argv[1..]. Returns false when --help was asked (usage() is then what to print).
  // Throws InputError on an unknown flag, a missing value or a bad value.
  bool parse(int argc, const char* const* argv);
  bool parse(const std::vector<std::string>& args);

  bool given(const std::string& name) const { return given_.count(name) > 0; }
  std::vector<std::string> givenFlags() const {
    std::vector<std::string> out;
    for (const auto& item : given_) out.push_back(item.first);
    return out;
  }
  std::string usage() const;
  const std::string& program() const { return program_; }

 private:
  struct Flag {
    std::string help;
    std::string defaultText;
    bool takesValue = true;
    std::function<void(const std::string&)> set;
  };
  void add(const std::string& name, Flag flag);

  std::string program_;
  std::string summary_;
  std::map<std::string, Flag> flags_;
  std::vector<std::string> order_;
  std::map<std::string, bool> given_;
};

// Parses the whole string as a number; InputError "<what>: expected ..., got '<text>'".
int64_t parseInt(const std::string& text, const std::string& what);
double parseDouble(const std::string& text, const std::string& what);
// Comma-separated non-negative integers, e.g. a placement "2,1,1".
std::vector<int64_t> parseIntList(const std::string& text, const std::string& what);

}  // namespace tl::launcher
