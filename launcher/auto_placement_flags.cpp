// The --placement auto and --emulate-* flags of tl-launch's table (launcher/job_flags.cpp): their
// values go to LaunchOptions::autoPlacement (elastic/placement/auto_placement_options.h).
#include <charconv>
#include <cmath>

#include "common/check.h"
#include "common/cli/cli.h"
#include "launcher/job_flags.h"

namespace tl::launcher {
namespace {

constexpr double kMaxSlowdown = 1000;

std::string joinDoubles(const std::vector<double>& v) {
  std::string s;
  for (double x : v) {
    char buf[32];
    s += (s.empty() ? "" : ",") + std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
  }
  return s;
}

std::vector<double> parseFactors(const std::string& v, const std::string& flag, double min, double max) {
  std::vector<double> out;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const double x = cli::parseDouble(item, flag);
    if (!(x >= min && x <= max)) inputError(flag, ": every value must be between ", min, " and ", max, ", got ", item);
    out.push_back(x);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

LaunchFlag flag(std::string name, std::string help, std::string example,
                std::function<void(LaunchOptions&, const std::string&)> set,
                std::function<std::string(const LaunchOptions&)> show) {
  LaunchFlag f;
  f.name = std::move(name);
  f.role = FlagRole::Run;
  f.help = std::move(help);
  f.example = std::move(example);
  f.set = std::move(set);
  f.show = std::move(show);
  return f;
}

}  // namespace

void addAutoPlacementFlags(std::vector<LaunchFlag>& t) {
  t.push_back(flag(
      "replan-window", "--placement auto: steps of measurements behind each placement decision", "3",
      [](LaunchOptions& o, const std::string& v) {
        const int64_t x = cli::parseInt(v, "--replan-window");
        if (x < 1 || x > 100000) inputError("--replan-window: must be between 1 and 100000, got ", x);
        o.autoPlacement.window = x;
      },
      [](const LaunchOptions& o) { return std::to_string(o.autoPlacement.window); }));
  t.push_back(flag(
      "replan-min-gain", "--placement auto: move ESTs only when the predicted step time drops by this fraction", "0.2",
      [](LaunchOptions& o, const std::string& v) {
        const double x = cli::parseDouble(v, "--replan-min-gain");
        if (!(x >= 0 && x <= 10)) inputError("--replan-min-gain: must be between 0 and 10, got ", v);
        o.autoPlacement.minGain = x;
      },
      [](const LaunchOptions& o) { return joinDoubles({o.autoPlacement.minGain}); }));
  t.back().realRange = std::make_pair(0.0, 10.0);
  t.push_back(flag(
      "replan-hold", "--placement auto: steps after a move before ESTs may move again", "5",
      [](LaunchOptions& o, const std::string& v) {
        const int64_t x = cli::parseInt(v, "--replan-hold");
        if (x < 0 || x > 1000000000) inputError("--replan-hold: must be between 0 and 1000000000, got ", x);
        o.autoPlacement.holdSteps = x;
      },
      [](const LaunchOptions& o) { return std::to_string(o.autoPlacement.holdSteps); }));
  t.push_back(flag(
      "emulate-slowdown",
      "per process: stretch each EST's compute F times by sleeping (F-1) x its measured compute, to emulate "
      "devices of different speed (timing only; the summary marks the run as emulated) [none]",
      "1,2",
      [](LaunchOptions& o, const std::string& v) {
        o.autoPlacement.slowdown = parseFactors(v, "--emulate-slowdown", 1, kMaxSlowdown);
      },
      [](const LaunchOptions& o) { return joinDoubles(o.autoPlacement.slowdown); }));
  t.push_back(flag(
      "emulate-slowdown-at", "STEP:F,F,..: --emulate-slowdown's factors from the step after STEP on [none]", "4:1,3",
      [](LaunchOptions& o, const std::string& v) {
        const size_t colon = v.find(':');
        if (colon == std::string::npos) inputError("--emulate-slowdown-at: expected STEP:F,F,.. , got '", v, "'");
        const int64_t step = cli::parseInt(v.substr(0, colon), "--emulate-slowdown-at");
        if (step < 1) inputError("--emulate-slowdown-at: STEP must be at least 1, got ", step);
        o.autoPlacement.slowdownAtStep = step;
        o.autoPlacement.slowdownAt = parseFactors(v.substr(colon + 1), "--emulate-slowdown-at", 1, kMaxSlowdown);
      },
      [](const LaunchOptions& o) {
        return o.autoPlacement.slowdownAt.empty()
                   ? std::string()
                   : std::to_string(o.autoPlacement.slowdownAtStep) + ":" + joinDoubles(o.autoPlacement.slowdownAt);
      }));
  t.push_back(flag(
      "emulate-device-memory",
      "MB, or MB,MB,.. per process: the memory the placement planner may give ESTs on a process [none]", "2,8",
      [](LaunchOptions& o, const std::string& v) {
        o.autoPlacement.deviceMemoryMb = parseFactors(v, "--emulate-device-memory", 0.001, 1e9);
      },
      [](const LaunchOptions& o) { return joinDoubles(o.autoPlacement.deviceMemoryMb); }));
}

}  // namespace tl::launcher
