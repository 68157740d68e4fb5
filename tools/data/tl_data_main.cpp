// tl-data: dataset tools. `synth` writes learnable synthetic data in the CIFAR-10 binary
// format; `jpeg-synth` writes a synthetic image folder of JPEG files; `tensors-synth` and
// `tokens-synth` write the array datasets' .npy files; `info` opens a dataset and summarises it. Bad input: one message, exit status 2.
#include <charconv>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/check.h"
#include "dataload/array_dataset.h"
#include "dataload/dataset.h"
#include "dataload/synthetic_arrays.h"
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
  tl-data tensors-synth --out DIR --train N --test M [--shape D1,D2,..] [--classes K] [--seed S]
      Writes a synthetic, learnable --dataset tensors folder: train_x.npy (float32, N samples
      of the shape), train_y.npy (int64 labels), test_x.npy and test_y.npy (M samples). Class k
      is a fixed +-3/4 pattern with noise; the same seed gives the same bytes.
        --out DIR      output directory (created if needed)
        --train N      training samples, 1..10000000
        --test M       test samples, 1..10000000
        --shape S      one sample's shape, comma-separated (default 1,8,8)
        --classes K    number of classes, 2..1000 (default 4)
        --seed S       generator seed, 0..2^64-1 (default 0)
  tl-data tokens-synth --out DIR --train N --val M [--vocab V] [--format F] [--seed S]
      Writes a synthetic, learnable --dataset tokens folder: N training and M validation token
      ids that mostly follow next = (5 * prev + 3) % V, as train.npy/val.npy (int32) or raw
      train.bin/val.bin.
        --out DIR      output directory (created if needed)
        --train N      training tokens, 2..1000000000
        --val M        validation tokens, 2..1000000000
        --vocab V      token ids 0..V-1, 2..65536 (default 16)
        --format F     npy (default), uint16 or uint32 (raw little-endian .bin)
        --seed S       generator seed, 0..2^64-1 (default 0)
  tl-data info --kind KIND --dir DIR [--seq-len L] [--token-dtype T]
      Opens both splits of a dataset and prints their size, image shape and class counts (for
      the array kinds: their samples and targets).
        --kind KIND    cifar10, mnist, fashion-mnist, imagefolder, tensors or tokens
        --dir DIR      the folder with the dataset files
        --seq-len L    tokens: tokens per sample
        --token-dtype  tokens: uint16 or uint32 to read raw .bin files
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

std::vector<int64_t> parseShape(const std::string& text) {
  std::vector<int64_t> shape;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? comma : comma - start);
    shape.push_back(int64_t(parseNumber("shape", part, 1, uint64_t(1) << 28)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  TL_REQUIRE(shape.size() <= 8, "--shape: at most 8 dimensions, got ", shape.size());
  return shape;
}

int runTensorsSynth(const CommandFlags& flags) {
  tl::data::SyntheticTensorsOptions options;
  const std::string& out = flags.required("out");
  TL_REQUIRE(!out.empty(), "--out needs a directory, got an empty string");
  options.trainSamples = int64_t(parseNumber("train", flags.required("train"), 1, 10'000'000));
  options.testSamples = int64_t(parseNumber("test", flags.required("test"), 1, 10'000'000));
  if (flags.given("shape")) options.shape = parseShape(flags.value("shape"));
  if (flags.given("classes")) options.classes = int(parseNumber("classes", flags.value("classes"), 2, 1000));
  if (flags.given("seed")) options.seed = parseNumber("seed", flags.value("seed"), 0, UINT64_MAX);
  tl::data::writeSyntheticTensors(options, out);
  std::printf("wrote %lld training and %lld test samples of float32 %s, %d classes, seed %llu, "
              "to %s (train_x.npy, train_y.npy, test_x.npy, test_y.npy)\n",
              (long long)options.trainSamples, (long long)options.testSamples,
              tl::data::shapeText(options.shape).c_str(), options.classes,
              (unsigned long long)options.seed, out.c_str());
  return 0;
}

int runTokensSynth(const CommandFlags& flags) {
  tl::data::SyntheticTokensOptions options;
  const std::string& out = flags.required("out");
  TL_REQUIRE(!out.empty(), "--out needs a directory, got an empty string");
  options.trainTokens = int64_t(parseNumber("train", flags.required("train"), 2, 1'000'000'000));
  options.valTokens = int64_t(parseNumber("val", flags.required("val"), 2, 1'000'000'000));
  if (flags.given("vocab")) options.vocab = int(parseNumber("vocab", flags.value("vocab"), 2, 65536));
  if (flags.given("format")) options.format = flags.value("format");
  if (flags.given("seed")) options.seed = parseNumber("seed", flags.value("seed"), 0, UINT64_MAX);
  tl::data::writeSyntheticTokens(options, out);
  std::printf("wrote %lld training and %lld validation tokens of %d ids (%s), seed %llu, to %s\n",
              (long long)options.trainTokens, (long long)options.valTokens, options.vocab,
              options.format.c_str(), (unsigned long long)options.seed, out.c_str());
  return 0;
}

int runArrayInfo(const CommandFlags& flags, const std::string& kind, const std::string& dir) {
  tl::data::ArrayDatasetOptions options;
  if (flags.given("seq-len")) options.seqLen = int64_t(parseNumber("seq-len", flags.value("seq-len"), 1, uint64_t(1) << 40));
  if (flags.given("token-dtype")) options.tokenDtype = flags.value("token-dtype");
  for (auto split : {tl::data::Split::Train, tl::data::Split::Test}) {
    auto source = tl::data::openArrayDataset(kind, dir, split, options);
    const auto text = [](const tl::data::SampleSpec& s) {
      return tl::data::dtypeName(s.dtype) + " " + tl::data::shapeText(s.shape);
    };
    std::printf("%s\n  samples %s, targets %s", source->describe().c_str(),
                text(source->inputSpec()).c_str(), text(source->targetSpec()).c_str());
    if (source->numClasses() > 0) std::printf(", %d classes", source->numClasses());
    std::printf("\n");
  }
  return 0;
}

int runInfo(const CommandFlags& flags) {
  const std::string& kind = flags.required("kind");
  const std::string& dir = flags.required("dir");
  if (tl::data::isArrayDataset(kind)) return runArrayInfo(flags, kind, dir);
  TL_REQUIRE(!flags.given("seq-len") && !flags.given("token-dtype"),
             "--seq-len and --token-dtype apply to --kind tokens only");
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
  CLI::App* tensorsSynth = app->add_subcommand("tensors-synth");
  CLI::App* tokensSynth = app->add_subcommand("tokens-synth");
  CLI::App* info = app->add_subcommand("info");
  const CommandFlags synthFlags(*synth, "synth", {"out", "train", "test", "seed", "classes"});
  const CommandFlags jpegFlags(
      *jpegSynth, "jpeg-synth",
      {"out", "classes", "train", "val", "min-size", "max-size", "seed", "quality"});
  const CommandFlags tensorsFlags(*tensorsSynth, "tensors-synth",
                                  {"out", "train", "test", "shape", "classes", "seed"});
  const CommandFlags tokensFlags(*tokensSynth, "tokens-synth",
                                 {"out", "train", "val", "vocab", "format", "seed"});
  const CommandFlags infoFlags(*info, "info", {"kind", "dir", "seq-len", "token-dtype"});
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return tl::cli::kExitBadInput;
  }
  if (!tl::cli::parse(*app, argc, argv)) return tl::cli::kExitOk;
  if (synth->parsed()) return runSynth(synthFlags);
  if (jpegSynth->parsed()) return runJpegSynth(jpegFlags);
  if (tensorsSynth->parsed()) return runTensorsSynth(tensorsFlags);
  if (tokensSynth->parsed()) return runTokensSynth(tokensFlags);
  if (info->parsed()) return runInfo(infoFlags);
  tl::inputError("no command (commands: synth, jpeg-synth, tensors-synth, tokens-synth, info; "
                 "see tl-data --help)");
}

}  // namespace

int main(int argc, char** argv) {
  return tl::cli::run(kProgram, [&] { return runDataTool(argc, argv); });
}
