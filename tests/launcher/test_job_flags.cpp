// The flag table is the one place that says what defines a job. These tests walk it: every
// defining flag must reach the job definition, survive the checkpoint's JSON form and be
// refused by a resume that changes it; every field of the definition must be set by some
// defining flag; run settings must never touch the definition and must be taken on resume.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/check.h"
#include "launcher/job_flags.h"
#include "launcher/launch_options.h"

namespace {

using tl::launcher::FlagRole;
using tl::launcher::LaunchFlag;
using tl::launcher::LaunchOptions;
using tl::launcher::launchFlags;

// A valid job without the flag (`before`) and the same job with `--flag example` (`after`).
// Some examples need context: --depth applies to resnet only, --image-size and --skip-corrupt
// to image folders, --checkpoint-every and --stop-at-step need a folder to write to.
struct Example {
  std::vector<std::string> before, after;
};

Example exampleOf(const LaunchFlag& flag) {
  std::vector<std::string> base = {"--data-dir", "/data"}, extra;
  if (flag.name == "data-dir") base = {};  // fashion-mnist's default folder
  if (flag.name == "image-size" || flag.name == "skip-corrupt" || flag.name == "cache-mb" ||
      flag.name == "emulate-storage-mbps")
    base = {"--dataset", "imagefolder", "--data-dir", "/d"};
  if (flag.name == "seq-len" || flag.name == "token-dtype") base = {"--dataset", "tokens", "--data-dir", "/d"};
  if (flag.name == "depth") extra = {"--model", "resnet"};
  if (flag.name == "decay-steps") extra = {"--lr-schedule", "cosine"};  // constant does not decay
  if (flag.name == "model-returns") extra = {"--model-file", "/etc/os-release"};  // a file-model setting
  if (flag.name == "checkpoint-every" || flag.name == "stop-at-step") extra = {"--output-dir", "/tmp/out"};
  if (flag.name == "eval-batches" || flag.name == "keep-best") extra = {"--eval-every", "10", "--output-dir", "/tmp/out"};
  Example e{base, base};
  e.after.insert(e.after.end(), extra.begin(), extra.end());
  e.after.push_back("--" + flag.name);
  if (!flag.isSwitch) e.after.push_back(flag.example);
  return e;
}

// `--resume /ck --flag [example]`
std::vector<std::string> resumeWith(const LaunchFlag& flag) {
  std::vector<std::string> args = {"--resume", "/ck", "--" + flag.name};
  if (!flag.isSwitch) args.push_back(flag.example);
  return args;
}

std::map<std::string, nlohmann::json> flat(const nlohmann::json& j) {
  std::map<std::string, nlohmann::json> out;
  const nlohmann::json flattened = j.flatten();  // items() refers into it
  for (auto& [k, v] : flattened.items()) out[k] = v;
  return out;
}

std::set<std::string> changedKeys(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<std::string> keys;
  auto fa = flat(a), fb = flat(b);
  for (auto& [k, v] : fa) {
    if (!fb.count(k) || fb[k] != v) keys.insert(k);
  }
  for (auto& [k, v] : fb) {
    if (!fa.count(k)) keys.insert(k);
  }
  return keys;
}

TEST(JobFlags, NamesAreUniqueAndExamplesDifferFromDefaults) {
  std::set<std::string> names;
  const LaunchOptions defaults;
  for (const LaunchFlag& flag : launchFlags()) {
    EXPECT_TRUE(names.insert(flag.name).second) << "--" << flag.name << " declared twice";
    EXPECT_FALSE(flag.help.empty()) << flag.name;
    if (flag.isSwitch) continue;
    LaunchOptions o;
    flag.set(o, flag.example);
    EXPECT_NE(flag.show(o), flag.show(defaults)) << "--" << flag.name << " example equals the default";
  }
}

// One default per setting: what a command line without the flag gives is the field's own
// initialiser, except for the two defaults that follow from other flags.
TEST(JobFlags, DefaultsAreTheFieldsInitialisers) {
  const LaunchOptions initialised;
  const LaunchOptions parsed = tl::launcher::parseLaunchOptions({"--data-dir", "/d"});
  for (const LaunchFlag& flag : launchFlags()) {
    if (flag.name == "epochs" || flag.name == "data-dir") continue;  // 1 epoch unless --steps; the folder
    EXPECT_EQ(flag.show(parsed), flag.show(initialised)) << "--" << flag.name;
  }
  EXPECT_EQ(parsed.job.epochs, 1);
  EXPECT_EQ(tl::launcher::parseLaunchOptions({"--steps", "3"}).job.epochs, 0);
  // A named object: GCC 12 at -O3 reads two temporaries' inlined constructors as maybe-uninitialized.
  const tl::JobDefinition definition;
  EXPECT_EQ(definition.reduction, tl::Reduction::Exact);
  EXPECT_EQ(definition.model.arch, "cnn");
}

TEST(JobFlags, TypedValuesParseOnceAndReadBack) {
  EXPECT_EQ(tl::parseReduction("fp32"), tl::Reduction::Fp32);
  EXPECT_STREQ(tl::toString(tl::Reduction::Exact), "exact");
  EXPECT_THROW(tl::parseReduction("int8"), tl::InputError);
  for (const char* text : {"cpu", "cuda", "sim:2000", "sim:0.5", "sim:1e+06"}) {
    EXPECT_EQ(tl::DeviceSpec::parse(text).toString(), text);
  }
  EXPECT_TRUE(tl::DeviceSpec::parse("cuda").isCuda());
  for (const char* bad : {"gpu", "sim:", "sim:0", "sim:-3", "sim:fast", "cuda:1"}) {
    EXPECT_THROW(tl::DeviceSpec::parse(bad), tl::InputError) << bad;
  }
}

TEST(JobFlags, EveryDefiningFlagIsCheckpointedAndCompared) {
  std::set<std::string> covered;
  for (const LaunchFlag& flag : launchFlags()) {
    if (flag.role != FlagRole::Defining) continue;
    SCOPED_TRACE("--" + flag.name);
    const Example ex = exampleOf(flag);
    const LaunchOptions before = tl::launcher::parseLaunchOptions(ex.before);
    const LaunchOptions after = tl::launcher::parseLaunchOptions(ex.after);
    // It reaches the definition...
    const auto keys = changedKeys(tl::toJson(before.job.definition()), tl::toJson(after.job.definition()));
    EXPECT_FALSE(keys.empty()) << "a defining flag that changes nothing in the job definition";
    covered.insert(keys.begin(), keys.end());
    // ...survives the checkpoint's JSON form...
    const tl::JobConfig restored = tl::jobConfigFromJson(tl::toJson(after.job));
    LaunchOptions viaCheckpoint = after;
    viaCheckpoint.job = restored;
    EXPECT_EQ(flag.show(viaCheckpoint), flag.show(after)) << "not kept by the checkpoint";
    // ...and a resume that would change it is refused, naming it.
    try {
      tl::launcher::parseResumeOptions(resumeWith(flag), before.job);
      ADD_FAILURE() << "resume accepted a changed definition";
    } catch (const tl::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--" + flag.name + " "), std::string::npos) << e.what();
    }
    // Giving the checkpoint's own value is fine.
    auto same = tl::launcher::parseResumeOptions(resumeWith(flag), after.job);
    EXPECT_EQ(flag.show(same), flag.show(after));
  }
  // Fields that follow from the data rather than from a flag (train::adaptModelToData).
  const std::set<std::string> derived = {"/model/num_classes", "/model/in_channels", "/model/image_size"};
  const tl::JobDefinition definition;  // named: see DefaultsAreTheFieldsInitialisers
  for (const auto& [key, value] : flat(tl::toJson(definition))) {
    if (derived.count(key)) continue;
    EXPECT_TRUE(covered.count(key)) << "definition field " << key << " is set by no defining flag";
  }
}

TEST(JobFlags, RunSettingsNeverTouchTheDefinitionAndAreTakenOnResume) {
  for (const LaunchFlag& flag : launchFlags()) {
    if (flag.role != FlagRole::Run || flag.name == "resume") continue;
    SCOPED_TRACE("--" + flag.name);
    Example ex = exampleOf(flag);
    const LaunchOptions before = tl::launcher::parseLaunchOptions(ex.before);
    const LaunchOptions after = tl::launcher::parseLaunchOptions(ex.after);
    EXPECT_EQ(tl::toJson(before.job.definition()), tl::toJson(after.job.definition()));
    if (flag.isSwitch) EXPECT_NE(flag.show(after), flag.show(before));
    else EXPECT_EQ(flag.show(after), flag.example);
    ex.after.insert(ex.after.end(), {"--resume", "/ck"});
    const LaunchOptions resumed = tl::launcher::parseResumeOptions(ex.after, before.job);
    EXPECT_EQ(flag.show(resumed), flag.show(after));
    EXPECT_EQ(tl::toJson(resumed.job.definition()), tl::toJson(before.job.definition()));
  }
}

TEST(JobFlags, ResumeKeepsTheCheckpointsRunSettingsUnlessGiven) {
  tl::JobConfig saved = tl::launcher::parseLaunchOptions({"--data-dir", "/old", "--workers", "3", "--eval"}).job;
  saved.logicalWorkers = 4;
  auto o = tl::launcher::parseResumeOptions({"--resume", "/ck", "--data-dir", "/new"}, saved);
  EXPECT_EQ(o.job.dataDir, "/new");
  EXPECT_EQ(o.job.workers, 3);
  EXPECT_TRUE(o.job.eval);
  EXPECT_EQ(o.job.logicalWorkers, 4);
  EXPECT_EQ(o.checkpointDir, "/ck");  // checkpoints continue where the job came from
}

TEST(JobFlags, ResumeNamesEveryConflictWithBothValues) {
  tl::JobConfig saved = tl::launcher::parseLaunchOptions({"--batch", "8", "--seed", "3"}).job;
  saved.logicalWorkers = 4;
  try {
    tl::launcher::parseResumeOptions({"--resume", "/ck", "--batch", "16", "--seed", "3", "--logical-workers", "2"},
                                     saved);
    FAIL() << "accepted";
  } catch (const tl::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--batch 16 (the checkpoint's job has 8)"), std::string::npos) << m;
    EXPECT_NE(m.find("--logical-workers 2 (the checkpoint's job has 4)"), std::string::npos) << m;
    EXPECT_EQ(m.find("--seed"), std::string::npos) << m;  // same value: no conflict
  }
}

// Every flag that takes a number refuses values no float holds (libtorch keeps optimizer
// settings as floats: --lr 1e300 used to fail in the first step) with an error naming it.
TEST(JobFlags, NumericFlagsRefuseValuesBeyondAFloat) {
  for (const LaunchFlag& flag : launchFlags()) {
    if (flag.isSwitch) continue;
    char* end = nullptr;
    std::strtod(flag.example.c_str(), &end);
    if (flag.example.empty() || *end != '\0') continue;  // not a number: --model, --placement, ...
    for (const char* value : {"1e300", "-1e300", "3.5e38", "-3.5e38"}) {
      LaunchOptions o;
      try {
        flag.set(o, value);
        ADD_FAILURE() << "--" << flag.name << " accepted " << value;
      } catch (const tl::InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("--" + flag.name + ":", 0), 0u) << e.what();
      }
    }
  }
}

// `--flag=` hands every flag an empty value (`--batch= --steps 2` is "--batch: expected an
// integer, got ''", not a complaint about "2"): the flag refuses it naming itself, or takes
// it, and the next flag is parsed as a flag either way.
TEST(JobFlags, AnEmptyValueAfterEqualsIsJudgedByTheFlag) {
  try {
    tl::launcher::parseLaunchOptions({"--batch=", "--steps", "2"});
    ADD_FAILURE() << "--batch= accepted";
  } catch (const tl::InputError& e) {
    EXPECT_STREQ(e.what(), "--batch: expected an integer, got ''");
  }
  for (const LaunchFlag& flag : launchFlags()) {
    if (flag.isSwitch || flag.name == "steps") continue;
    SCOPED_TRACE("--" + flag.name + "=");
    try {
      const LaunchOptions o =
          tl::launcher::parseLaunchOptions({"--data-dir", "/d", "--" + flag.name + "=", "--steps", "2"});
      EXPECT_EQ(o.job.steps, 2);
    } catch (const tl::InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--" + flag.name, 0), 0u) << e.what();
    }
  }
}

// The flags taking real numbers declare their range; it is finite, a float holds it, and its
// bounds and the example are accepted.
TEST(JobFlags, RealFlagsDeclareFiniteFloatRanges) {
  int reals = 0;
  for (const LaunchFlag& flag : launchFlags()) {
    if (!flag.realRange) continue;
    SCOPED_TRACE("--" + flag.name);
    ++reals;
    const auto [min, max] = *flag.realRange;
    EXPECT_TRUE(std::isfinite(min) && std::isfinite(max));
    EXPECT_LE(std::abs(min), std::numeric_limits<float>::max());
    EXPECT_LE(std::abs(max), std::numeric_limits<float>::max());
    LaunchOptions o;
    EXPECT_NO_THROW(flag.set(o, flag.example));
    const double example = std::strtod(flag.example.c_str(), nullptr);
    EXPECT_TRUE(example >= min && example <= max);
    EXPECT_THROW(flag.set(o, std::to_string(max * 2 + 1)), tl::InputError);
  }
  EXPECT_GE(reals, 15) << "--lr, --momentum, ... --bucket-mb";
}

// --emulate-storage-mbps: a rate in MB/s above 0, for image folders only; anything else is
// one error naming the flag and what is wrong.
TEST(JobFlags, EmulatedStorageTakesAPositiveRateForImageFolders) {
  const std::vector<std::string> folder = {"--dataset", "imagefolder", "--data-dir", "/d"};
  auto with = [&](const std::vector<std::string>& base, const std::string& value) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--emulate-storage-mbps", value});
    return tl::launcher::parseLaunchOptions(args);
  };
  EXPECT_DOUBLE_EQ(with(folder, "2.5").job.emulateStorageMbps, 2.5);
  EXPECT_DOUBLE_EQ(tl::launcher::parseLaunchOptions(folder).job.emulateStorageMbps, 0) << "off";
  for (const std::string bad : {"0", "-1", "fast", "0.0001", "nan", ""}) {
    SCOPED_TRACE(bad);
    try {
      with(folder, bad);
      ADD_FAILURE() << "accepted";
    } catch (const tl::InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--emulate-storage-mbps:", 0), 0u) << e.what();
    }
  }
  try {
    with({"--dataset", "cifar10", "--data-dir", "/d"}, "4");
    ADD_FAILURE() << "accepted for cifar10";
  } catch (const tl::InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("--emulate-storage-mbps applies to --dataset imagefolder only"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
