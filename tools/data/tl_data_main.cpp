// tl-data: dataset tools. `synth` writes learnable synthetic data in the CIFAR-10 binary
// format; `jpeg-synth` writes a synthetic image folder of JPEG files; `info` opens a dataset
// and summarises it. Bad input: one message, exit status 2.
#include <charconv>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/check.h"
#include "dataload/dataset.h"
#include "dataload/synthetic.h"
#include "dataload/synthetic_jpeg.h"
#include "common/cli/cli.h"

namespace {

constexpr const char* kProgram = "tl-data";

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
  tl-data --help | tl-data COMMAND --help | tl-data --version

Exit status: 0 on success, 2 for bad input (flags, files), 1 for an internal error.
)";

// One command's flags, all taken as text and checked here (numbers with their ranges), so the
// messages name the flag and the command.
class CommandFlags {
 public:
  CommandFlags(CLI::App& app, std::string command, const std::vector<std::string>& names)
      : command_(std::move(command)) {
    for (const std::string& name : names)
      options_[name] = app.add_option("--" + name, values_[name]);
  }
  bool given(const std::string& name) const { return options_.at(name)->count() > 0; }
  const std::string& value(const std::string& name) const { return values_.at(name); }
  const std::string& required(const std::string& name) const {
    TL_REQUIRE(given(name), "'tl-data ", command_, "' needs --", name, " (see tl-data ", command_,
               " --help)");
    return value(name);
  }

 private:
  std::string command_;
  std::map<std::string, std::string> values_;  // a map: the options keep pointers into it
  std::map<std::string, CLI::Option*> options_;
};

uint64_t parseNumber(const std::string& name, const std::string& text, uint64_t lo, uint64_t hi) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  TL_REQUIRE(!text.empty() && error == std::errc() && stop == end && value >= lo && value <= hi,
             "--", name, " expects a whole number from ", lo, " to ", hi, ", got '", text, "'");
  return value;
}

int runSynth(const CommandFlags& flags) {
  const uint64_t maxImages = uint64_t(tl::data::kMaxSyntheticImagesPerSplit);
  tl::data::SyntheticOptions options;
  const std::string& out = flags.required("out");
  TL_REQUIRE(!out.empty(), "--out needs a directory, got an empty string");
  options.trainImages = int64_t(parseNumber("train", flags.required("train"), 1, maxImages));
  options.testImages = int64_t(parseNumber("test", flags.required("test"), 1, maxImages));
  if (flags.given("seed")) options.seed = parseNumber("seed", flags.value("seed"), 0, UINT64_MAX);
  if (flags.given("classes")) {
    options.classes = int(parseNumber("classes", flags.value("classes"), 2, 10));
  }
  tl::data::writeSyntheticCifar10(options, out);
  std::printf("wrote %lld training images (data_batch_1..5.bin), %lld test images "
              "(test_batch.bin) and batches.meta.txt, %d classes, seed %llu, to %s\n",
              (long long)options.trainImages, (long long)options.testImages, options.classes,
              (unsigned long long)options.seed, out.c_str());
  return 0;
}

int runJpegSynth(const CommandFlags& flags) {
  const uint64_t maxImages = uint64_t(tl::data::kMaxSyntheticJpegsPerSplit);
  tl::data::SyntheticJpegOptions options;
  const std::string& out = flags.required("out");
  TL_REQUIRE(!out.empty(), "--out needs a directory, got an empty string");
  options.classes = int(parseNumber("classes", flags.required("classes"), 2, 1000));
  options.trainImages = int64_t(parseNumber("train", flags.required("train"), 1, maxImages));
  options.valImages = int64_t(parseNumber("val", flags.required("val"), 1, maxImages));
  auto optional = [&](const std::string& name, uint64_t lo, uint64_t hi, uint64_t fallback) {
    return flags.given(name) ? parseNumber(name, flags.value(name), lo, hi) : fallback;
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

int runInfo(const CommandFlags& flags) {
  const std::string& kind = flags.required("kind");
  const std::string& dir = flags.required("dir");
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

int runDataTool(int argc, char** argv) {
  auto app = tl::cli::makeApp(kProgram, "");
  tl::cli::useHelpText(*app, kUsage);
  CLI::App* synth = app->add_subcommand("synth");
  CLI::App* jpegSynth = app->add_subcommand("jpeg-synth");
  CLI::App* info = app->add_subcommand("info");
  const CommandFlags synthFlags(*synth, "synth", {"out", "train", "test", "seed", "classes"});
  const CommandFlags jpegFlags(
      *jpegSynth, "jpeg-synth",
      {"out", "classes", "train", "val", "min-size", "max-size", "seed", "quality"});
  const CommandFlags infoFlags(*info, "info", {"kind", "dir"});
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return tl::cli::kExitBadInput;
  }
  if (!tl::cli::parse(*app, argc, argv)) return tl::cli::kExitOk;
  if (synth->parsed()) return runSynth(synthFlags);
  if (jpegSynth->parsed()) return runJpegSynth(jpegFlags);
  if (info->parsed()) return runInfo(infoFlags);
  tl::inputError("no command (commands: synth, jpeg-synth, info; see tl-data --help)");
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runDataTool(argc, argv); });
}
