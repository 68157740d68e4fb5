// Step time of tl training your own model (tl-launch --model-file) against PyTorch running the
// same .pt module on a batch of the same shape, and the scripted ResNet-18 against tl's built-in
// resnet18 (issue 28). One process, one compute thread, no communication; all in one invocation.
//
// Models (bench/reference/own_model_step.py exports them at the start of the run):
//   cnn       tl's --model cnn (bench/reference/ddp_models.py), scripted; CIFAR batch 32, SGD
//   resnet18  tl's --model resnet18 (ddp_models.py's CIFAR ResNet-18), scripted; batch 32, SGD
//   gpt       examples/gpt's decoder (4 blocks, width 128, context 128), scripted, returning its
//             own loss; 16 sequences of 128 tokens, AdamW
// SGD is lr 0.05 momentum 0.9 (tl's default), AdamW lr 0.002 weight decay 0.01, in both.
//
// Runs per model and round, in an order that reverses from round to round (bench_stats.h):
//   tl        tl-launch --model-file M.pt (under mpirun -np 1, --workers 0, --compute-threads 1):
//             tl's real training step (the EST executor's forward, backward, reduction over one
//             process, buffers, optimizer, metrics). A step's time is the interval between its
//             metrics.jsonl record and the previous one, less the time its batch took to load
//             (data_wait_s; the loader runs on the training thread), so data loading is out of it
//             as it is out of PyTorch's, which trains on one fixed random batch.
//   PyTorch   /usr/bin/python3, torch.set_num_threads(1), in one process (own_model_step.py):
//               .pt      torch.jit.load(M.pt) as PyTorch runs it by default (graph executor on)
//               plain    the same .pt with the graph executor's optimisations off: op by op, as
//                        tl runs it
//               eager    the un-scripted nn.Module holding the .pt's weights
//   built-in  tl-launch --model cnn / --model resnet18 (same flags otherwise)
// A run's figure is the median of its timed steps (after the warm-up ones); the table gives the
// median over rounds with its 95 % interval, and each ratio tl / reference as the median of the
// per-round ratios with its interval.
//
// Targets (issue 28): tl <= 1.05 x PyTorch eager's step time on the same module; the scripted
// ResNet-18 <= 1.05 x the built-in one.
//
//   bench_own_model [--quick] [--rounds R] [--steps S] [--warmup W] [--models cnn,resnet18,gpt]
//                   [--pytorch-malloc tl] [--device D]
// --pytorch-malloc tl: PyTorch runs with tl's malloc settings (common/allocator_tuning.cpp, by
// glibc's MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_), so the ratios compare the steps
// without tl's allocator advantage (large on the CNN).
// Defaults: 5 rounds of 3 timed steps after 2 warm-up ones (about 10 minutes on a quiet 2-core
// machine); --quick, a smoke run: 1 round of 1 timed step. Needs /usr/bin/python3 with torch
// (TL_BENCH_PYTHON: another interpreter, e.g. pip's PyTorch on a GPU machine).
// --device D: tl-launch --device D and PyTorch on D (bench/gpu_check.sh: cuda); left out, neither
// is told a device (the CPU).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/bench_support.h"

namespace {

struct OwnModel {
  std::string name;
  std::string builtin;  // tl's flags for the built-in twin; empty: none
  int batch;
};

std::string captureOrDie(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) text += buf;
  if (!p || pclose(p) != 0) {
    std::fprintf(stderr, "bench_own_model: command failed: %s\n%s", cmd.c_str(), text.c_str());
    std::exit(1);
  }
  return text;
}

std::string gDevice;  // --device, or empty

// The Python that exports the modules and runs PyTorch's step.
std::string python() {
  const char* p = std::getenv("TL_BENCH_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

std::string script() { return std::string(TL_BENCH_SOURCE_DIR) + "/reference/own_model_step.py"; }

double median(std::vector<double> v) { return tl::bench::medianWithCi(std::move(v)).median; }

// tl's step in ms: the median over the timed steps of (interval between step records) less
// (the step's data wait). `modelFlags` picks the model (--model-file ... or --model ...).
double tlStepMs(const std::string& root, const std::string& tag, const OwnModel& m, const std::string& modelFlags,
                const std::string& imageData, const std::string& tokenData, int warmup, int steps) {
  const std::string out = root + "/" + tag;
  std::string data = m.name == "gpt" ? "--dataset tokens --data-dir " + tokenData +
                                           " --seq-len 128 --optimizer adamw --lr 0.002 --weight-decay 0.01"
                                     : "--dataset cifar10 --data-dir " + imageData +
                                           " --augment off --optimizer sgd --lr 0.05 --momentum 0.9";
  tl::bench::runOrDie(tl::bench::mpirun(1) + tl::bench::binDir() + "/tl-launch " + modelFlags + " " + data +
                      " --batch " + std::to_string(m.batch) +
                      " --workers 0 --compute-threads 1 --logical-workers 1 --log-every 0 --control-bind none" +
                      (gDevice.empty() ? "" : " --device " + gDevice) +
                      " --steps " + std::to_string(warmup + steps) + " --output-dir " + out + " >" + out +
                      ".log 2>&1");
  const auto records = tl::bench::metricsRecords(out, "step");
  std::vector<double> ms;
  for (size_t i = size_t(warmup); i < records.size(); ++i) {
    if (i == 0) continue;
    const auto& a = records[i - 1];
    const auto& b = records[i];
    // data_wait_s adds up over an epoch and starts again with the next one.
    const double wait = b["data_wait_s"].get<double>() -
                        (a["epoch"] == b["epoch"] ? a["data_wait_s"].get<double>() : 0.0);
    ms.push_back(1e3 * (b["time"].get<double>() - a["time"].get<double>() - wait));
  }
  if (ms.empty()) {
    std::fprintf(stderr, "bench_own_model: %s/metrics.jsonl has no timed step\n", out.c_str());
    std::exit(1);
  }
  return median(ms);
}

// PyTorch's step in ms per variant (.pt, plain, eager, and on a device eager with deterministic
// kernels, as tl runs them), each the median over its timed steps.
std::vector<double> torchStepMs(const std::string& dir, const OwnModel& m, int warmup, int steps, bool reversed,
                                const std::string& env) {
  std::string variants = reversed ? "eager,plain,pt" : "pt,plain,eager";
  if (!gDevice.empty()) variants = reversed ? "eagerdet," + variants : variants + ",eagerdet";
  const std::string text =
      captureOrDie(env + python() + " " + script() + " time --model " + m.name + " --file " + dir + "/" + m.name +
                   ".pt --batch " + std::to_string(m.batch) + " --steps " + std::to_string(steps) +
                   " --warmup " + std::to_string(warmup) + " --threads 1 --variants " + variants +
                   (gDevice.empty() ? "" : " --device " + gDevice) + " 2>&1");
  const auto j = nlohmann::json::parse(text.substr(text.rfind('{')));
  std::vector<double> out;
  for (const char* v : {"pt", "plain", "eager", "eagerdet"})
    if (j.contains(v)) out.push_back(median(j[v].get<std::vector<double>>()));
  return out;
}

std::string flag(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
      continue;
    }
    if ((a == "--rounds" || a == "--steps" || a == "--warmup" || a == "--models" || a == "--pytorch-malloc" ||
         a == "--device") &&
        i + 1 < argc) {
      ++i;
      continue;
    }
    std::fprintf(stderr,
                 "bench_own_model: unknown flag or missing value: %s\n"
                 "usage: bench_own_model [--quick] [--rounds R] [--steps S] [--warmup W] [--models cnn,resnet18,gpt] "
                 "[--pytorch-malloc tl] [--device D]\n",
                 argv[i]);
    return 2;
  }
  const int rounds = std::stoi(flag(argc, argv, "--rounds", quick ? "1" : "5"));
  const int steps = std::stoi(flag(argc, argv, "--steps", quick ? "1" : "3"));
  const int warmup = std::stoi(flag(argc, argv, "--warmup", "2"));
  const std::string modelList = flag(argc, argv, "--models", "cnn,resnet18,gpt");
  const std::string pytorchMalloc = flag(argc, argv, "--pytorch-malloc", "default");
  gDevice = flag(argc, argv, "--device", "");
  if (pytorchMalloc != "default" && pytorchMalloc != "tl") {
    std::fprintf(stderr, "bench_own_model: --pytorch-malloc takes tl or default, got '%s'\n", pytorchMalloc.c_str());
    return 2;
  }
  // tl-launch's mallopt(M_MMAP_THRESHOLD, 512 MiB) and mallopt(M_TRIM_THRESHOLD, 1 GiB).
  const std::string torchEnv =
      pytorchMalloc == "tl" ? "MALLOC_MMAP_THRESHOLD_=536870912 MALLOC_TRIM_THRESHOLD_=1073741824 " : "";
  std::vector<OwnModel> models;
  for (const OwnModel& m : {OwnModel{"cnn", "--model cnn", 32}, OwnModel{"resnet18", "--model resnet18", 32},
                            OwnModel{"gpt", "", 16}})
    if (("," + modelList + ",").find("," + m.name + ",") != std::string::npos) models.push_back(m);
  if (models.empty() || rounds < 1 || steps < 1 || warmup < 1) {
    std::fprintf(stderr, "bench_own_model: --models takes cnn, resnet18 and/or gpt; --rounds, --steps and "
                         "--warmup must be positive\n");
    return 2;
  }
  if (std::system((python() + " -c 'import torch' >/dev/null 2>&1").c_str()) != 0) {
    std::fprintf(stderr, "bench_own_model: %s cannot import torch (install Debian's python3-torch, or name another "
                         "interpreter in TL_BENCH_PYTHON): it exports the modules and runs the PyTorch reference\n",
                 python().c_str());
    return 1;
  }
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  const std::string root = tl::bench::binDir() + "/../bench-tmp/own_model";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const int vocab = 96;  // about the GPT example's character vocabulary
  captureOrDie(python() + " " + script() + " export " + root + " --vocab " + std::to_string(vocab) + " 2>&1");
  const int total = warmup + steps;
  const std::string imageData = tl::bench::synthData(root, 32 * total + 32);
  const std::string tokenData = root + "/tokens";
  tl::bench::runOrDie(tl::bench::binDir() + "/tl-data tokens-synth --out " + tokenData + " --train " +
                      std::to_string(16 * 128 * total + 129) + " --val 256 --vocab " + std::to_string(vocab) +
                      " >/dev/null");

  std::printf("bench_own_model: one process, one compute thread, no communication; %d alternating round%s of "
              "%d timed steps after %d warm-up ones; median [95 %% CI] over rounds\n",
              rounds, rounds == 1 ? "" : "s", steps, warmup);
  std::printf("tl: tl-launch --model-file M.pt (the EST executor's step, data loading excluded); PyTorch: "
              "%s, torch %s, one fixed batch, %s malloc settings%s%s\n\n",
              python().c_str(),
              captureOrDie(python() + " -c 'import torch; print(torch.__version__, end=\"\")'").c_str(),
              pytorchMalloc == "tl" ? "tl's" : "glibc's default", gDevice.empty() ? "" : "; device ",
              gDevice.c_str());
  std::printf("%-9s %-44s %-24s %-22s\n", "model", "run", "step ms", "tl .pt / this");

  using tl::bench::formatCi;
  using tl::bench::medianWithCi;
  struct Verdict {
    std::string what;
    double ratio;
  };
  std::vector<Verdict> verdicts;
  for (const OwnModel& m : models) {
    // [tl .pt, PyTorch .pt, PyTorch plain, PyTorch eager, tl built-in, PyTorch eager deterministic,
    //  tl .pt --reduction fp32][round]; the last two on a device only
    // configs: tl, python (its variants), built-in (where there is one), tl fp32 (on a device)
    const size_t configs = (m.builtin.empty() ? 2 : 3) + (gDevice.empty() ? 0 : 1);
    std::vector<std::vector<double>> ms(7);
    const std::string modelFile =
        "--model-file " + root + "/" + m.name + ".pt" + (m.name == "gpt" ? " --model-returns loss" : "");
    for (int round = 0; round < rounds; ++round) {
      for (size_t c : tl::bench::roundOrder(configs, size_t(round))) {
        const std::string tag = m.name + "_" + std::to_string(c) + "_" + std::to_string(round);
        if (c == 0) {
          ms[0].push_back(tlStepMs(root, tag, m, modelFile, imageData, tokenData, warmup, steps));
        } else if (c == 1) {
          const auto t = torchStepMs(root, m, warmup, steps, round % 2 == 1, torchEnv);
          for (size_t v = 0; v < 3; ++v) ms[1 + v].push_back(t[v]);
          if (t.size() > 3) ms[5].push_back(t[3]);
        } else if (c + 1 == configs && !gDevice.empty()) {
          ms[6].push_back(tlStepMs(root, tag, m, modelFile + " --reduction fp32", imageData, tokenData, warmup, steps));
        } else {
          ms[4].push_back(tlStepMs(root, tag, m, m.builtin, imageData, tokenData, warmup, steps));
        }
      }
      char builtin[48] = "";
      if (!ms[4].empty()) std::snprintf(builtin, sizeof builtin, ", built-in %.1f", ms[4].back());
      std::fprintf(stderr, "round %d %s: tl %.1f ms, PyTorch .pt %.1f, plain %.1f, eager %.1f%s\n", round + 1,
                   m.name.c_str(), ms[0].back(), ms[1].back(), ms[2].back(), ms[3].back(), builtin);
    }
    auto ratioTo = [&](size_t ref) {
      std::vector<double> r;
      for (int i = 0; i < rounds; ++i) r.push_back(ms[0][i] / ms[ref][i]);
      return medianWithCi(r);
    };
    const char* names[] = {"tl --model-file (TorchScript)", "PyTorch .pt (torch.jit.load, default)",
                           "PyTorch .pt, graph optimisation off", "PyTorch eager nn.Module, same weights",
                           "tl built-in --model", "PyTorch eager, deterministic kernels as tl",
                           "tl --model-file, --reduction fp32"};
    for (size_t c = 0; c < 7; ++c) {
      if (ms[c].empty()) continue;
      const std::string ratio = c == 0 ? "-" : formatCi(ratioTo(c));
      std::printf("%-9s %-44s %-24s %-22s\n", c == 0 ? m.name.c_str() : "", names[c],
                  formatCi(medianWithCi(ms[c]), "%.1f").c_str(), ratio.c_str());
    }
    std::fflush(stdout);
    verdicts.push_back({m.name + ": tl / PyTorch .pt (default)", ratioTo(1).median});
    verdicts.push_back({m.name + ": tl / PyTorch eager nn.Module", ratioTo(3).median});
    if (!ms[4].empty()) verdicts.push_back({m.name + ": scripted / built-in", ratioTo(4).median});
    if (!ms[5].empty()) verdicts.push_back({m.name + ": tl / PyTorch eager, deterministic", ratioTo(5).median});
  }
  std::printf("\ntargets (issue 28): tl <= 1.05 x PyTorch on the same module; scripted ResNet-18 <= 1.05 x the "
              "built-in\n");
  for (const auto& v : verdicts)
    std::printf("  %-44s %.3f  %s\n", v.what.c_str(), v.ratio, v.ratio <= 1.05 ? "met" : "MISSED");
  return 0;
}
