// tl-launch's flags, each declared once: name, help, which field it sets, whether it is part
// of the job's definition. The default a flag shows is the field's own initialiser
// (runtime/job_config.h, launch_options.h). Parsing, --help, resume's comparison of
// definitions and the test that every defining field is checkpointed and compared all walk
// this one table.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/launch_options.h"

namespace tl::launcher {

enum class FlagRole {
  Defining,  // decides the job's result: checkpointed, and a resume refuses to change it
  Run,       // how and where this launch runs: may differ at every resume
};

struct LaunchFlag {
  std::string name;     // without the leading --
  FlagRole role = FlagRole::Run;
  std::string help;
  bool isSwitch = false;    // --eval: takes no value
  std::string example;      // a valid value that differs from the default (tests use it)
  // Stores a value given on the command line; InputError naming the flag for a bad one.
  std::function<void(LaunchOptions&, const std::string&)> set;
  // The field's value as text: the default in --help, and what resume compares.
  std::function<std::string(const LaunchOptions&)> show;
  // Flags taking a real number: the values accepted (finite, within what a float holds).
  std::optional<std::pair<double, double>> realRange;
};

// Every tl-launch flag, in --help order.
const std::vector<LaunchFlag>& launchFlags();

// The flag named `name` (without --); nullptr if there is none.
const LaunchFlag* findLaunchFlag(const std::string& name);

// The --placement auto and --emulate-* flags (launcher/auto_placement_flags.cpp), for the table.
void addAutoPlacementFlags(std::vector<LaunchFlag>& table);

}  // namespace tl::launcher
