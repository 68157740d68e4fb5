// The kinds of tl-launch's flags (launcher/job_flags.cpp builds its table from them): a flag
// bound to one field of LaunchOptions, with its parser and range check (integer, real,
// string, choice, switch) and how its value is shown. Each bad value gets one InputError naming
// the flag. Internal to tl_job_flags.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/cli/cli.h"
#include "launcher/job_flags.h"

namespace tl::launcher::flag_kinds {

using cli::parseDouble;
using cli::parseInt;
using cli::parseIntList;

constexpr FlagRole kDefining = FlagRole::Defining;
constexpr FlagRole kRun = FlagRole::Run;

inline std::string text(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
inline std::string text(int64_t v) { return std::to_string(v); }
inline std::string text(int v) { return std::to_string(v); }
inline std::string text(uint64_t v) { return std::to_string(v); }
inline std::string text(bool v) { return v ? "true" : "false"; }
inline std::string text(const std::string& v) { return v; }

// A flag whose value is converted by hand (typed values, lists, units).
inline LaunchFlag custom(std::string name, FlagRole role, std::string help, std::string example,
                  std::function<void(LaunchOptions&, const std::string&)> set,
                  std::function<std::string(const LaunchOptions&)> show) {
  LaunchFlag f;
  f.name = std::move(name);
  f.role = role;
  f.help = std::move(help);
  f.example = std::move(example);
  f.set = std::move(set);
  f.show = std::move(show);
  return f;
}

// A flag bound to one field: `field(options)` returns a reference to it.
template <typename Field>
LaunchFlag bound(std::string name, FlagRole role, std::string help, std::string example, Field field,
                 std::function<void(LaunchOptions&, const std::string&)> set) {
  return custom(std::move(name), role, std::move(help), std::move(example), std::move(set),
                [field](const LaunchOptions& o) { return text(field(const_cast<LaunchOptions&>(o))); });
}

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

// An integer field of type T in [min, max] (max kUnbounded: up to what T holds).
template <typename T, typename Field>
LaunchFlag integer(std::string name, FlagRole role, std::string help, std::string example, Field field,
                   int64_t min, int64_t max = kUnbounded) {
  constexpr int64_t typeMax =
      std::is_same_v<T, uint64_t> ? kUnbounded : int64_t(std::numeric_limits<T>::max());
  const int64_t hi = std::min(max, typeMax);
  const std::string flag = "--" + name;
  return bound(name, role, std::move(help), std::move(example), field,
               [=](LaunchOptions& o, const std::string& v) {
                 const int64_t x = parseInt(v, flag);
                 if (x < min && max == kUnbounded) inputError(flag, ": must be at least ", min, ", got ", x);
                 if (x < min || x > hi) inputError(flag, ": must be between ", min, " and ", hi, ", got ", x);
                 field(o) = T(x);
               });
}

// Real-valued settings end up in floats (libtorch's optimizer options, schedules), so every
// range is finite and within what a float holds; the bounds below are what makes sense.
constexpr double kMaxRate = 1e3;    // learning rates and per-step factors
constexpr double kMaxEpochs = 1e6;  // lengths in epochs

inline void checkRealRange(const std::string& name, double min, double max) {
  TL_CHECK(std::isfinite(min) && std::isfinite(max) && min <= max &&
               std::abs(min) <= std::numeric_limits<float>::max() &&
               std::abs(max) <= std::numeric_limits<float>::max(),
           "--", name, ": range [", min, ", ", max, "] is not a finite float range");
}

// A real field in [min, max].
template <typename Field>
LaunchFlag real(std::string name, FlagRole role, std::string help, std::string example, Field field,
                double min, double max) {
  checkRealRange(name, min, max);
  const std::string flag = "--" + name;
  LaunchFlag f = bound(name, role, std::move(help), std::move(example), field,
                       [=](LaunchOptions& o, const std::string& v) {
                         const double x = parseDouble(v, flag);
                         if (x < min || x > max)
                           inputError(flag, ": must be between ", min, " and ", max, ", got ", x);
                         field(o) = x;
                       });
  f.realRange = std::make_pair(min, max);
  return f;
}

// A real flag whose range excludes its upper bound 1 (Adam's betas: 1 - beta^t divides).
inline LaunchFlag belowOne(LaunchFlag f) {
  const auto inner = f.set;
  const std::string flag = "--" + f.name;
  f.set = [inner, flag](LaunchOptions& o, const std::string& v) {
    inner(o, v);
    if (parseDouble(v, flag) >= 1) inputError(flag, ": must be below 1 (Adam divides by 1 - beta^t), got ", v);
  };
  return f;
}

template <typename Field>
LaunchFlag string(std::string name, FlagRole role, std::string help, std::string example, Field field) {
  const std::string flag = "--" + name;
  return bound(name, role, std::move(help), std::move(example), field,
               [=](LaunchOptions& o, const std::string& v) {
                 TL_REQUIRE(!v.empty(), flag, ": must not be empty");
                 field(o) = v;
               });
}

template <typename Field>
LaunchFlag choice(std::string name, FlagRole role, std::string help, std::vector<std::string> choices,
                  std::string example, Field field) {
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : "|") + c;
  const std::string flag = "--" + name;
  return bound(name, role, help + " (" + list + ")", std::move(example), field,
               [=](LaunchOptions& o, const std::string& v) {
                 for (const auto& c : choices) {
                   if (c == v) {
                     field(o) = v;
                     return;
                   }
                 }
                 inputError(flag, ": unknown value '", v, "' (expected one of ", list, ")");
               });
}

// A switch (no value) that sets a bool field to `value`.
template <typename Field>
LaunchFlag toggle(std::string name, FlagRole role, std::string help, Field field, bool value) {
  LaunchFlag f = bound(name, role, std::move(help), "", field,
                       [=](LaunchOptions& o, const std::string&) { field(o) = value; });
  f.isSwitch = true;
  return f;
}

}  // namespace tl::launcher::flag_kinds

// A field of LaunchOptions, as the flag kinds take it: TL_FIELD(job.steps).
#define TL_FIELD(expr) [](LaunchOptions & o) -> auto& { return o.expr; }
