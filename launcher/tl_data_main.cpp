// tl-data: dataset tools. `synth` writes learnable synthetic data in the CIFAR-10 binary
// format; `jpeg-synth` writes a synthetic image folder of JPEG files; `info` opens a dataset
// and summarises it. Bad input: one message, exit status 2.
#include <charconv>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "common/check.h"
#include "dataload/dataset.h"
#include "dataload/synthetic.h"
#include "dataload/synthetic_jpeg.h"

namespace {

constexpr const char* kUsage = R"(tl-data: dataset tools for tl.

Usage:
  tl-data synth --out DIR --train N --test M [--seed S] [--classes K]
      Writes synthetic, learnable 32x32 RGB data in the CIFAR-10 binary format: N training
      images split as evenly as possible over data_batch_1.bin .. data_batch_5.bin, M test
      images in test_batch.bin, the class names in batches.meta.txt. Each class is a coloured
      shape with per-image jitter, shifts and noise; the same seed gives the same bytes.
        --out DIR      output directory (created if needed)
        --train N      training images, 1..10000000
        --test M       test images, 1..10000000
        --seed S       generator seed, 0..2^64-1 (default 0)
        --classes K    number of classes, 2..10 (default 10)
  tl-data jpeg-synth --out DIR --classes K --train N --val M [--min-size A] [--max-size B]
                     [--seed S] [--quality Q]
      Writes a synthetic image folder in the ImageNet layout: DIR/train/class_XX/img_YYYYY.jpg
      (N images) and DIR/val/... (M images), image i in class i % K. Each class is a coloured
      shape on a tinted background with per-image jitter and noise; sides are drawn from
      [A, B]; the same seed gives the same pixels. DIR/train and DIR/val must not hold files.
        --out DIR       output directory (created if needed)
        --classes K     number of classes, 2..1000
        --train N       training images, K..10000000
        --val M         validation images, K..10000000
        --min-size A    smallest image side, 8..4096 (default 48)
        --max-size B    largest image side, A..4096 (default 96)
        --seed S        generator seed, 0..2^64-1 (default 0)
        --quality Q     JPEG quality, 1..100 (default 90)
  tl-data info --kind KIND --dir DIR
      Opens both splits of a dataset and prints their size, image shape and class counts.
        --kind KIND    cifar10, mnist, fashion-mnist or imagefolder
        --dir DIR      the folder with the dataset files
  tl-data --help | tl-data COMMAND --help

Exit status: 0 on success, 2 for bad input (flags, files), 1 for an internal error.
)";

// Flags of one command: "--name value" or "--name=value", each at most once.
std::map<std::string, std::string> parseFlags(const std::string& command,
                                              const std::vector<std::string>& args,
                                              const std::vector<std::string>& known) {
  std::map<std::string, std::string> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    TL_REQUIRE(arg.rfind("--", 0) == 0, "unexpected argument '", arg, "' for 'tl-data ", command,
               "' (see tl-data ", command, " --help)");
    std::string name = arg.substr(2), value;
    const size_t equals = name.find('=');
    if (equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    } else {
      TL_REQUIRE(i + 1 < args.size(), "flag --", name, " needs a value");
      value = args[++i];
    }
    bool isKnown = false;
    for (const std::string& k : known) isKnown = isKnown || k == name;
    TL_REQUIRE(isKnown, "unknown flag '--", name, "' for 'tl-data ", command, "' (see tl-data ",
               command, " --help)");
    TL_REQUIRE(flags.count(name) == 0, "flag --", name, " is given twice");
    flags[name] = value;
  }
  return flags;
}

const std::string& required(const std::map<std::string, std::string>& flags,
                            const std::string& command, const std::string& name) {
  auto it = flags.find(name);
  TL_REQUIRE(it != flags.end(), "'tl-data ", command, "' needs --", name, " (see tl-data ",
             command, " --help)");
  return it->second;
}

uint64_t parseNumber(const std::string& name, const std::string& text, uint64_t lo, uint64_t hi) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  TL_REQUIRE(!text.empty() && error == std::errc() && stop == end && value >= lo && value <= hi,
             "--", name, " expects a whole number from ", lo, " to ", hi, ", got '", text, "'");
  return value;
}

int runSynth(const std::vector<std::string>& args) {
  auto flags = parseFlags("synth", args, {"out", "train", "test", "seed", "classes"});
  const uint64_t maxImages = uint64_t(tl::data::kMaxSyntheticImagesPerSplit);
  tl::data::SyntheticOptions options;
  const std::string& out = required(flags, "synth", "out");
  TL_REQUIRE(!out.empty(), "--out needs a directory, got an empty string");
  options.trainImages = int64_t(parseNumber("train", required(flags, "synth", "train"), 1, maxImages));
  options.testImages = int64_t(parseNumber("test", required(flags, "synth", "test"), 1, maxImages));
  if (flags.count("seed")) options.seed = parseNumber("seed", flags["seed"], 0, UINT64_MAX);
  if (flags.count("classes")) options.classes = int(parseNumber("classes", flags["classes"], 2, 10));
  tl::data::writeSyntheticCifar10(options, out);
  std::printf("wrote %lld training images (data_batch_1..5.bin), %lld test images "
              "(test_batch.bin) and batches.meta.txt, %d classes, seed %llu, to %s\n",
              (long long)options.trainImages, (long long)options.testImages, options.classes,
              (unsigned long long)options.seed, out.c_str());
  return 0;
}

int runJpegSynth(const std::vector<std::string>& args) {
  const std::string command = "jpeg-synth";
  auto flags = parseFlags(command, args, {"out", "classes", "train", "val", "min-size", "max-size",
                                          "seed", "quality"});
  const uint64_t maxImages = uint64_t(tl::data::kMaxSyntheticJpegsPerSplit);
  tl::data::SyntheticJpegOptions options;
  const std::string& out = required(flags, command, "out");
  TL_REQUIRE(!out.empty(), "--out needs a directory, got an empty string");
  options.classes = int(parseNumber("classes", required(flags, command, "classes"), 2, 1000));
  options.trainImages =
      int64_t(parseNumber("train", required(flags, command, "train"), 1, maxImages));
  options.valImages = int64_t(parseNumber("val", required(flags, command, "val"), 1, maxImages));
  auto optional = [&](const std::string& name, uint64_t lo, uint64_t hi, uint64_t fallback) {
    return flags.count(name) ? parseNumber(name, flags[name], lo, hi) : fallback;
  };
  options.minSide = int(optional("min-size", 8, 4096, uint64_t(options.minSide)));
  options.maxSide = int(optional("max-size", 8, 4096, uint64_t(options.maxSide)));
  options.seed = optional("seed", 0, UINT64_MAX, options.seed);
  options.quality = int(optional("quality", 1, 100, uint64_t(options.quality)));
  tl::data::writeSyntheticImageFolder(options, out);
  std::printf("wrote %lld training and %lld validation JPEGs, %d classes, sides %d..%d, quality "
              "%d, seed %llu, to %s/train and %s/val\n",
              (long long)options.trainImages, (long long)options.valImages, options.classes,
              options.minSide, options.maxSide, options.quality, (unsigned long long)options.seed,
              out.c_str(), out.c_str());
  return 0;
}

int runInfo(const std::vector<std::string>& args) {
  auto flags = parseFlags("info", args, {"kind", "dir"});
  const std::string& kind = required(flags, "info", "kind");
  const std::string& dir = required(flags, "info", "dir");
  for (auto split : {tl::data::Split::Train, tl::data::Split::Test}) {
    auto dataset = tl::data::openDataset(kind, dir, split);
    const auto shape = dataset->imageShape();
    const std::string image =
        shape.height > 0 ? tl::str(shape.height, "x", shape.width, "x", shape.channels, " (HxWxC)")
                         : tl::str("sizes vary, ", shape.channels, " channels");
    std::printf("%s\n  image %s, %d classes, images per class:", dataset->describe().c_str(),
                image.c_str(), dataset->numClasses());
    std::vector<int64_t> perClass(size_t(dataset->numClasses()), 0);
    for (int64_t i = 0; i < dataset->size(); ++i) ++perClass[size_t(dataset->label(i))];
    for (int64_t count : perClass) std::printf(" %lld", (long long)count);
    std::printf("\n");
  }
  return 0;
}

bool wantsHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || wantsHelp(args)) {
      std::fputs(kUsage, args.empty() ? stderr : stdout);
      return args.empty() ? 2 : 0;
    }
    const std::string command = args.front();
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "synth") return runSynth(rest);
    if (command == "jpeg-synth") return runJpegSynth(rest);
    if (command == "info") return runInfo(rest);
    tl::inputError("unknown command '", command,
                   "' (commands: synth, jpeg-synth, info; see tl-data --help)");
  } catch (const tl::InputError& e) {
    std::fprintf(stderr, "tl-data: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tl-data: internal error: %s\n", e.what());
    return 1;
  }
}
