#include "common/cli/cli.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "common/check.h"
#include "common/version.h"

namespace tl::cli {
namespace {

// "tl-data synth": the program and the subcommands chosen, for "see ... --help".
std::string commandPath(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    path += " " + sub->get_name();
  }
  return path;
}

void rejectRepeats(CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 1) inputError(option->get_name(), " is given twice");
  }
  for (CLI::App* sub : app.get_subcommands()) rejectRepeats(*sub);
}

void rejectLeftovers(CLI::App& app) {
  const std::vector<std::string> left = app.remaining(true);
  if (left.empty()) return;
  const std::string& first = left.front();
  const std::string see = " (see " + commandPath(app) + " --help)";
  if (first.rfind("-", 0) == 0)
    inputError("unknown flag '", first.substr(0, first.find('=')), "'", see);
  const auto commands = app.get_subcommands([](CLI::App*) { return true; });
  if (!commands.empty() && app.get_subcommands().empty()) {
    std::string names;
    for (const CLI::App* c : commands) names += (names.empty() ? "" : ", ") + c->get_name();
    inputError("unknown command '", first, "' (commands: ", names, "; see ", app.get_name(),
               " --help)");
  }
  inputError("unexpected argument '", first, "'", see);
}

// A flag that takes a value takes the next argument whatever it looks like, as `--mpi-args
// "--mca btl tcp,self"` needs; CLI11 would read that value as a flag, so it gets `=` instead.
const CLI::Option* valueFlag(CLI::App& app, const std::string& arg) {
  if (arg.rfind("--", 0) != 0 || arg.find('=') != std::string::npos) return nullptr;
  const CLI::Option* option = app.get_option_no_throw(arg);
  if (option == nullptr) {
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      if ((option = sub->get_option_no_throw(arg)) != nullptr) break;
    }
  }
  return option != nullptr && option->get_expected_min() > 0 ? option : nullptr;
}

std::vector<std::string> joinFlagValues(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      out.insert(out.end(), args.begin() + long(i), args.end());
      break;
    }
    const std::string& arg = args[i];
    if (i + 1 < args.size() && args[i + 1].rfind("-", 0) == 0 && valueFlag(app, arg)) {
      out.push_back(arg + "=" + args[i + 1]);
      ++i;
    } else if (arg.size() > 3 && arg.find('=') == arg.size() - 1 &&
               valueFlag(app, arg.substr(0, arg.size() - 1))) {
      // `--batch=`: CLI11 reads "--batch=" as "--batch" and takes the next argument as the
      // value; the flag is given its empty value instead, and judges it.
      out.push_back(arg.substr(0, arg.size() - 1));
      out.push_back("");
    } else {
      out.push_back(args[i]);
    }
  }
  return out;
}

template <typename Int>
CLI::Option* addInteger(CLI::App& app, const std::string& flag, Int* target,
                        const std::string& help, Int min, Int max, Int noMax) {
  auto set = [=](const std::string& text) {
    const int64_t x = parseInt(text, flag);
    if (x < int64_t(min) || x > int64_t(max)) {
      if (max == noMax) inputError(flag, ": must be at least ", min, ", got ", x);
      inputError(flag, ": must be between ", min, " and ", max, ", got ", x);
    }
    *target = Int(x);
  };
  return app.add_option_function<std::string>(flag, set, help)
      ->type_name("INT")
      ->default_str(std::to_string(*target));
}

}  // namespace

std::unique_ptr<CLI::App> makeApp(const std::string& program, const std::string& help) {
  auto app = std::make_unique<CLI::App>(help, program);
  app->set_help_flag("-h,--help", "print this help and exit");
  app->set_version_flag("--version", versionLine(program), "print the version and exit");
  // Repeats and leftovers are reported by parse() in tl's words, so CLI11 collects them.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app->allow_extras();
  app->get_formatter()->column_width(30);
  return app;
}

namespace {

class FixedHelp : public CLI::Formatter {
 public:
  explicit FixedHelp(std::string text) : text_(std::move(text)) {}
  std::string make_help(const CLI::App*, std::string, CLI::AppFormatMode) const override {
    return text_;
  }

 private:
  std::string text_;
};

}  // namespace

void useHelpText(CLI::App& app, std::string text) {
  app.formatter(std::make_shared<FixedHelp>(std::move(text)));
}

bool parse(CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse(app, std::move(args));
}

bool parse(CLI::App& app, std::vector<std::string> args, std::string* helpText) {
  auto showHelp = [&](const std::string& text) {
    if (helpText) *helpText = text;
    else std::fputs(text.c_str(), stdout);
    return false;
  };
  args = joinFlagValues(app, args);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return showHelp(app.help());
  } catch (const CLI::CallForAllHelp&) {
    return showHelp(app.help("", CLI::AppFormatMode::All));
  } catch (const CLI::CallForVersion& e) {
    return showHelp(std::string(e.what()) + "\n");
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11: "--out: 1 required TEXT missing"; only a flag at the very end can miss its value.
    const std::string what = e.what();
    const size_t colon = what.find(':');
    if (what.find(" required ") != std::string::npos && colon != std::string::npos) {
      inputError(what.substr(0, colon), ": missing value");
    }
    inputError(what, " (see ", commandPath(app), " --help)");
  } catch (const CLI::ParseError& e) {
    inputError(e.what(), " (see ", commandPath(app), " --help)");
  }
  rejectRepeats(app);
  rejectLeftovers(app);
  return true;
}

int run(const std::string& program, const std::function<int()>& body) {
  auto report = [&](const char* what) {
    std::string message = what;
    const std::string prefix = program + ": ";  // said once, here
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), message.c_str());
  };
  try {
    return body();
  } catch (const InputError& e) {
    report(e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    report(e.what());
    return kExitFailure;
  }
}

CLI::Option* addInt(CLI::App& app, const std::string& flag, int* target, const std::string& help,
                    int min, int max) {
  return addInteger<int>(app, flag, target, help, min, max, INT32_MAX);
}

CLI::Option* addInt(CLI::App& app, const std::string& flag, int64_t* target,
                    const std::string& help, int64_t min, int64_t max) {
  return addInteger<int64_t>(app, flag, target, help, min, max, INT64_MAX);
}

CLI::Option* addDouble(CLI::App& app, const std::string& flag, double* target,
                       const std::string& help, double min, double max) {
  std::ostringstream shown;
  shown << *target;
  auto set = [=](const std::string& text) {
    const double x = parseDouble(text, flag);
    if (x < min || x > max) inputError(flag, ": must be between ", min, " and ", max, ", got ", x);
    *target = x;
  };
  return app.add_option_function<std::string>(flag, set, help)
      ->type_name("NUMBER")
      ->default_str(shown.str());
}

int64_t parseInt(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    inputError(what, ": expected an integer, got '", text, "'");
  }
  return v;
}

double parseDouble(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    inputError(what, ": expected a number, got '", text, "'");
  }
  return v;
}

std::vector<int64_t> parseIntList(const std::string& text, const std::string& what) {
  if (text.empty() || text.back() == ',') {
    inputError(what, ": expected a comma-separated list of integers, got '", text, "'");
  }
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(parseInt(item, what));
  return out;
}

std::vector<std::string> splitBlanks(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace tl::cli
