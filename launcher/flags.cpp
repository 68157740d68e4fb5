#include "launcher/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/check.h"

namespace tl::launcher {

int64_t parseInt(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    inputError(what, ": expected an integer, got '", text, "'");
  }
  return v;
}

double parseDouble(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    inputError(what, ": expected a number, got '", text, "'");
  }
  return v;
}

std::vector<int64_t> parseIntList(const std::string& text, const std::string& what) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parseInt(item, what));
  if (text.empty() || text.back() == ',') inputError(what, ": expected a comma-separated list of integers, got '", text, "'");
  return out;
}

FlagSet::FlagSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void FlagSet::add(const std::string& name, Flag flag) {
  TL_CHECK(flags_.count(name) == 0, "flag --", name, " registered twice");
  order_.push_back(name);
  flags_[name] = std::move(flag);
}

void FlagSet::addString(const std::string& name, std::string* target, const std::string& help) {
  add(name, {help, *target, true, [target](const std::string& v) { *target = v; }});
}

void FlagSet::addInt(const std::string& name, int64_t* target, const std::string& help,
                     int64_t min, int64_t max) {
  add(name, {help, std::to_string(*target), true, [=](const std::string& v) {
                int64_t x = parseInt(v, "--" + name);
                if (x < min || x > max) {
                  if (max == INT64_MAX) inputError("--", name, ": must be at least ", min, ", got ", x);
                  inputError("--", name, ": must be between ", min, " and ", max, ", got ", x);
                }
                *target = x;
              }});
}

void FlagSet::addInt(const std::string& name, int* target, const std::string& help, int min,
                     int max) {
  add(name, {help, std::to_string(*target), true, [=](const std::string& v) {
                int64_t x = parseInt(v, "--" + name);
                if (x < min || x > max) {
                  if (max == INT32_MAX) inputError("--", name, ": must be at least ", min, ", got ", x);
                  inputError("--", name, ": must be between ", min, " and ", max, ", got ", x);
                }
                *target = int(x);
              }});
}

void FlagSet::addDouble(const std::string& name, double* target, const std::string& help,
                        double min, double max) {
  std::ostringstream def;
  def << *target;
  add(name, {help, def.str(), true, [=](const std::string& v) {
                double x = parseDouble(v, "--" + name);
                if (x < min || x > max) inputError("--", name, ": must be between ", min, " and ", max, ", got ", x);
                *target = x;
              }});
}

void FlagSet::addBool(const std::string& name, bool* target, const std::string& help) {
  add(name, {help, "", false, [target](const std::string&) { *target = true; }});
}

void FlagSet::addChoice(const std::string& name, std::string* target,
                        std::vector<std::string> choices, const std::string& help) {
  std::string list;
  for (auto& c : choices) list += (list.empty() ? "" : "|") + c;
  add(name, {help + " (" + list + ")", *target, true, [=](const std::string& v) {
                for (auto& c : choices) {
                  if (c == v) {
                    *target = v;
                    return;
                  }
                }
                inputError("--", name, ": unknown value '", v, "' (expected one of ", list, ")");
              }});
}

bool FlagSet::parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse(args);
}

bool FlagSet::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") return false;
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      inputError(program_, ": unexpected argument '", arg, "' (flags start with --; see --help)");
    }
    std::string name = arg.substr(2);
    std::string value;
    bool hasValue = false;
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) inputError(program_, ": unknown flag --", name, " (see --help)");
    Flag& flag = it->second;
    if (flag.takesValue && !hasValue) {
      if (i + 1 >= args.size()) inputError("--", name, ": missing value");
      value = args[++i];
      hasValue = true;
    }
    if (!flag.takesValue && hasValue) inputError("--", name, ": takes no value, got '", value, "'");
    if (given_.count(name)) inputError("--", name, ": given more than once");
    flag.set(value);
    given_[name] = true;
  }
  return true;
}

std::string FlagSet::usage() const {
  std::ostringstream os;
  os << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
  for (const auto& name : order_) {
    const Flag& f = flags_.at(name);
    std::string left = "  --" + name + (f.takesValue ? " V" : "");
    os << left;
    if (left.size() < 26) os << std::string(26 - left.size(), ' ');
    else os << "\n" << std::string(26, ' ');
    os << f.help;
    if (f.takesValue && !f.defaultText.empty()) os << " [default: " << f.defaultText << "]";
    os << "\n";
  }
  os << "  --help                  print this help\n";
  return os.str();
}

}  // namespace tl::launcher
