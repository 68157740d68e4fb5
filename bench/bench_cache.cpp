// bench_cache: the dataset cache (--cache-mb) against the kernel's page cache at the same memory,
// on a JPEG folder about 1.5x the budget, over 3 epochs of shuffled reads + decode +
// RandomResizedCrop by 2 loader threads.
//
// How memory is held to the same amount in both runs: each run is a child process in a memory
// cgroup of its own (cgroup v1 memory.limit_in_bytes, or v2 memory.max) whose limit is what the
// child uses once set up (the dataset's file list, the threads) + the budget + 4 MiB of slack.
// The page cache is charged to the cgroup that reads a file, so without a tl cache the kernel
// caches the folder within that limit; with the tl cache, every storage read is dropped from
// the page cache (POSIX_FADV_DONTNEED) and the budget holds encoded files in process memory.
// Before each run every file is dropped from the page cache, so both start cold. Bytes read
// from storage are the kernel's count for the child (/proc/self/io read_bytes). Without cgroups
// (not root, no memory controller) the page-cache run is unconstrained, and the table says so.
//
//   bench_cache [--budget-mb 16] [--dir /tmp/tl-bench-cache] [--threads 2]
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataload/image_folder.h"
#include "dataload/resized_crop.h"
#include "dataload/sample_cache.h"
#include "dataload/synthetic_jpeg.h"
#include "dataload/transforms.h"

namespace fs = std::filesystem;
using namespace tl::data;

namespace {

constexpr int kEpochs = 3;

struct EpochFigures {
  double seconds = 0;
  int64_t images = 0;
  int64_t storageBytes = 0;  // /proc/self/io read_bytes during the epoch
  int64_t hits = 0;
};

int64_t readBytesSoFar() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return -1;
}

int64_t folderBytes(const ImageFolderDataset& d) {
  int64_t total = 0;
  for (int64_t i = 0; i < d.size(); ++i) total += int64_t(fs::file_size(d.path(i)));
  return total;
}

void dropFromPageCache(const ImageFolderDataset& d) {
  ::sync();
  for (int64_t i = 0; i < d.size(); ++i) {
    const int fd = ::open(d.path(i).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// A memory cgroup for one child: v1 (/sys/fs/cgroup/memory) or v2 (/sys/fs/cgroup with the
// memory controller). Empty when neither can be made here.
struct MemoryCgroup {
  std::string dir, limitFile, usageFile;
  bool ok() const { return !dir.empty(); }
};

MemoryCgroup makeCgroup(const std::string& name) {
  std::error_code e;
  MemoryCgroup g;
  if (fs::exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
    g = {"/sys/fs/cgroup/memory/" + name, "memory.limit_in_bytes", "memory.usage_in_bytes"};
  } else if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
    g = {"/sys/fs/cgroup/" + name, "memory.max", "memory.current"};
  } else {
    return {};
  }
  if (!fs::create_directory(g.dir, e) || !fs::exists(g.dir + "/" + g.limitFile)) {
    fs::remove(g.dir, e);
    return {};
  }
  return g;
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return bool(out);
}

int64_t readNumber(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  in >> v;
  return v;
}

// The child: joins the cgroup, sets its limit from its own usage + budget, reads 3 epochs.
void runChild(const std::string& dir, int64_t budget, bool tlCache, int threads,
              const MemoryCgroup& cgroup, int out) {
  DatasetOptions options;
  if (tlCache) options.cacheBytes = budget;
  auto dataset = std::make_shared<ImageFolderDataset>(dir, Split::Train, options);
  ResizedCropOptions crop;
  crop.size = 64;
  SamplePipeline pipeline(dataset, makeResizedCrop(crop), 7);
  int64_t limit = -1;
  if (cgroup.ok()) {
    writeFile(cgroup.dir + "/cgroup.procs", std::to_string(::getpid()));
    limit = readNumber(cgroup.dir + "/" + cgroup.usageFile) + budget + (4 << 20);
    if (!writeFile(cgroup.dir + "/" + cgroup.limitFile, std::to_string(limit))) limit = -1;
  }
  std::vector<int64_t> order(size_t(dataset->size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(3);
  std::vector<EpochFigures> figures;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t hitsBefore = tlCache ? dataset->sampleCache()->stats().hits : 0;
    const int64_t readBefore = readBytesSoFar();
    std::atomic<size_t> next{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        std::vector<float> pixels(size_t(pipeline.outputShape().numel()));
        std::vector<uint8_t> scratch;
        for (size_t i; (i = next.fetch_add(1)) < order.size();) {
          pipeline.load(epoch, order[i], pixels.data(), scratch);
        }
      });
    }
    for (auto& t : pool) t.join();
    EpochFigures f;
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    f.images = int64_t(order.size());
    f.storageBytes = readBytesSoFar() - readBefore;
    f.hits = tlCache ? dataset->sampleCache()->stats().hits - hitsBefore : -1;
    figures.push_back(f);
  }
  (void)!::write(out, &limit, sizeof limit);
  (void)!::write(out, figures.data(), figures.size() * sizeof(EpochFigures));
}

struct Run {
  int64_t limit = -1;
  std::vector<EpochFigures> epochs;
};

Run runInCgroup(const std::string& dir, const ImageFolderDataset& listing, int64_t budget,
                bool tlCache, int threads) {
  dropFromPageCache(listing);
  MemoryCgroup cgroup = makeCgroup("tl-bench-cache-" + std::to_string(::getpid()));
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    try {
      runChild(dir, budget, tlCache, threads, cgroup, fds[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_cache: %s\n", e.what());
      ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  Run run;
  run.epochs.resize(kEpochs);
  const bool got = ::read(fds[0], &run.limit, sizeof run.limit) == sizeof run.limit &&
                   ::read(fds[0], run.epochs.data(), kEpochs * sizeof(EpochFigures)) ==
                       ssize_t(kEpochs * sizeof(EpochFigures));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (cgroup.ok()) {
    writeFile(cgroup.dir + "/memory.force_empty", "0");
    std::error_code e;
    fs::remove(cgroup.dir, e);
  }
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_cache: the %s run failed (status %d)\n",
                 tlCache ? "tl cache" : "page cache", status);
    std::exit(1);
  }
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t budgetMb = 16;
  int threads = 2;
  std::string dir = "/tmp/tl-bench-cache";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--budget-mb") budgetMb = std::atoll(argv[i + 1]);
    else if (flag == "--threads") threads = std::atoi(argv[i + 1]);
    else if (flag == "--dir") dir = argv[i + 1];
    else {
      std::fprintf(stderr, "bench_cache: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (budgetMb < 1 || threads < 1) {
    std::fprintf(stderr, "bench_cache: --budget-mb and --threads must be at least 1\n");
    return 2;
  }
  const int64_t budget = budgetMb << 20;
  // Files of ~10 kB on average (128-256 px synthetic images at quality 90): ~1.5x the budget.
  SyntheticJpegOptions synth;
  synth.classes = 10;
  synth.minSide = 128;
  synth.maxSide = 256;
  synth.seed = 4;
  synth.valImages = 10;
  synth.trainImages = std::max<int64_t>(20, budget * 3 / 2 / 10'300);
  std::error_code e;
  fs::remove_all(dir, e);
  writeSyntheticImageFolder(synth, dir);
  ImageFolderDataset listing(dir, Split::Train, DatasetOptions{});
  const int64_t bytes = folderBytes(listing);
  std::printf("bench_cache: %lld JPEG files, %.1f MiB (%.2fx the %lld MiB budget), %d threads, "
              "%d epochs, decode + RandomResizedCrop 64\n",
              (long long)listing.size(), bytes / 1048576.0, double(bytes) / double(budget),
              (long long)budgetMb, threads, kEpochs);

  const Run page = runInCgroup(dir, listing, budget, false, threads);
  const Run tl = runInCgroup(dir, listing, budget, true, threads);
  std::printf("memory limit per run: %s\n",
              page.limit > 0 ? ("cgroup, page cache run " + std::to_string(page.limit >> 20) +
                                " MiB, tl cache run " + std::to_string(tl.limit >> 20) + " MiB")
                                   .c_str()
                             : "NONE (no memory cgroup here): the page cache run is unconstrained");
  std::printf("\n| run | epoch | images/s | MiB read from storage | tl cache hits |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const auto* r : {&page, &tl}) {
    for (int ep = 0; ep < kEpochs; ++ep) {
      const EpochFigures& f = r->epochs[size_t(ep)];
      std::printf("| %s | %d | %.0f | %.1f | %s |\n", r == &page ? "page cache" : "tl cache", ep,
                  double(f.images) / f.seconds, f.storageBytes / 1048576.0,
                  f.hits < 0 ? "-" : (std::to_string(f.hits) + " (" +
                                      std::to_string(100 * f.hits / std::max<int64_t>(f.images, 1)) +
                                      " %)").c_str());
    }
  }
  // Epochs 1 and 2: the steady state, after the cold first epoch.
  double pageRead = 0, tlRead = 0, pageSec = 0, tlSec = 0;
  for (int ep = 1; ep < kEpochs; ++ep) {
    pageRead += double(page.epochs[size_t(ep)].storageBytes);
    tlRead += double(tl.epochs[size_t(ep)].storageBytes);
    pageSec += page.epochs[size_t(ep)].seconds;
    tlSec += tl.epochs[size_t(ep)].seconds;
  }
  std::printf("\nepochs 1-2: storage reads tl cache / page cache = %.2f (%.1f vs %.1f MiB), "
              "images/s tl cache / page cache = %.2f\n",
              pageRead > 0 ? tlRead / pageRead : 0.0, tlRead / 1048576.0, pageRead / 1048576.0,
              tlSec > 0 ? pageSec / tlSec : 0.0);
  fs::remove_all(dir, e);
  return 0;
}
