// Loader throughput on JPEG image folders: read + decode (libjpeg-turbo) + RandomResizedCrop +
// flip + normalize into float NCHW batches, per loader thread, with 1 and 2 threads.
//
// Sources of ~64 px cropped to 56 (CIFAR-like), ~256 px cropped to 224 (ImageNet-like), and
// ~512 px cropped to 112 with and without reduced DCT decoding (where a crop covers at least
// twice the output, libjpeg decodes at 1/2, 1/4 or 1/8 of each side). The folders are written
// by the synthetic generator into a temporary folder first; the files are then in the page
// cache, so the figures are CPU cost, not disk speed. "decode only" is the full-size decode
// alone on one thread, the floor of the per-image cost. Each measurement runs `--seconds`
// (default 2) twice and keeps the better run (other processes only ever slow a run down).
//
//   bench_jpeg [--seconds S] [--dir DIR]
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/throughput.h"
#include "dataload/image_folder.h"
#include "dataload/loader.h"
#include "dataload/resized_crop.h"
#include "dataload/synthetic_jpeg.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace tl::data;

struct Config {
  const char* name;
  int minSide, maxSide;
  int images;
  int target;
  bool reducedDecode;
};

using tl::bench::Measurement;
using tl::bench::processCpuSeconds;

Measurement measureLoader(const std::shared_ptr<const SamplePipeline>& pipeline, int workers,
                          double seconds) {
  auto stream = std::make_shared<BatchStream>(
      DistributedSampler(SamplerOptions{pipeline->dataset().size(), 1, 0, 0, true, false}), 64,
      true);
  Loader loader(pipeline, [stream] { return std::optional<BatchRequest>(stream->next()); },
                LoaderOptions{workers, 2, LoaderOptions{}.samplesPerTask});
  for (int i = 0; i < 2; ++i) loader.next();  // threads started, buffers sized
  int64_t images = 0;
  const Clock::time_point start = Clock::now();
  const double cpuStart = processCpuSeconds();
  double elapsed = 0;
  while (elapsed < seconds) {
    images += loader.next()->images.size(0);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return Measurement{double(images) / elapsed, (processCpuSeconds() - cpuStart) / elapsed};
}

// Full-size decodes only, one thread.
double measureDecode(const Dataset& dataset, double seconds) {
  std::vector<uint8_t> scratch;
  int64_t images = 0;
  const Clock::time_point start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    dataset.image(images % dataset.size(), scratch);
    ++images;
    if (images % 16 == 0) elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return double(images) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2.0;
  bool ownDir = true;  // a temporary folder of our own is removed at the end
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("tl-bench-jpeg-" + std::to_string(::getpid())))
                        .string();
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::printf("usage: bench_jpeg [--seconds S] [--dir DIR]\n");
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_jpeg: error: %s needs a value\n", flag.c_str());
      return 2;
    }
    if (flag == "--seconds") {
      seconds = std::atof(argv[++i]);
    } else if (flag == "--dir") {
      dir = argv[++i];
      ownDir = false;
    } else {
      std::fprintf(stderr, "bench_jpeg: error: unknown flag '%s'\n", flag.c_str());
      return 2;
    }
  }
  if (seconds <= 0) {
    std::fprintf(stderr, "bench_jpeg: error: --seconds must be positive\n");
    return 2;
  }

  const Config configs[] = {
      {"~64 px -> 56", 56, 72, 1000, 56, true},
      {"~256 px -> 224", 224, 288, 300, 224, true},
      {"~512 px -> 112, reduced decode", 448, 576, 150, 112, true},
      {"~512 px -> 112, full decode", 448, 576, 150, 112, false},
  };
  std::printf("bench_jpeg: synthetic JPEG folders (quality 90) in %s, decode + RandomResizedCrop + "
              "flip + normalize\ninto float NCHW batches of 64, best of 2 runs of %.1f s\n\n",
              dir.c_str(), seconds);
  std::printf("%-32s %12s %12s %12s %12s %10s %10s\n", "source -> crop", "decode only",
              "1 thread", "2 threads", "per thread", "2 vs 1", "CPUs used");
  for (const Config& c : configs) {
    const std::string folder = dir + "/" + std::to_string(c.minSide) + "-" +
                               std::to_string(c.images);
    if (!std::filesystem::exists(folder + "/train")) {
      SyntheticJpegOptions synth;
      synth.classes = 10;
      synth.trainImages = c.images;
      synth.valImages = 10;
      synth.minSide = c.minSide;
      synth.maxSide = c.maxSide;
      writeSyntheticImageFolder(synth, folder);
    }
    auto dataset = std::make_shared<ImageFolderDataset>(folder, Split::Train, DatasetOptions{});
    ResizedCropOptions crop;
    crop.size = c.target;
    crop.reducedDecode = c.reducedDecode;
    auto pipeline = std::make_shared<const SamplePipeline>(dataset, makeResizedCrop(crop), 0);
    double decode = 0;
    Measurement best[3];
    for (int run = 0; run < 2; ++run) {
      decode = std::max(decode, measureDecode(*dataset, seconds / 2));
      for (int workers : {1, 2}) {
        const Measurement m = measureLoader(pipeline, workers, seconds);
        if (m.imagesPerSecond > best[workers].imagesPerSecond) best[workers] = m;
      }
    }
    std::printf("%-32s %12.0f %12.0f %12.0f %12.0f %9.2fx %5.2f/%.2f\n", c.name, decode,
                best[1].imagesPerSecond, best[2].imagesPerSecond, best[2].imagesPerSecond / 2,
                best[2].imagesPerSecond / best[1].imagesPerSecond, best[1].cpusUsed,
                best[2].cpusUsed);
  }
  std::printf("\nimages/s; per thread = 2-thread rate / 2; CPUs used = process CPU time / wall "
              "time with 1 / 2 threads\n(below the thread count, other processes held the "
              "cores during the run).\n");
  if (ownDir) std::filesystem::remove_all(dir);
  return 0;
}
