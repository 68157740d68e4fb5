// Images/s of tl against PyTorch DDP on the same machine, in one invocation: ResNet-18 (CIFAR)
// and ResNet-20, batch 32 per worker, one compute thread per process, random CIFAR-shaped data.
//   - PyTorch DDP (bench/reference/ddp_speed.py): 2 processes, gloo on CPU, the reference;
//   - tl in DDP mode: 2 processes x 1 EST (tl-launch --logical-workers 2);
//   - tl with 4 ESTs on the same 2 processes (--logical-workers 4): twice the images per step.
// Each round runs the three in alternating order; a ratio is tl's images/s over PyTorch's in the
// same round, reported as the median over rounds with its 95 % confidence interval.
// With --cluster, the same again with the two processes on two namespace hosts, one each, over
// TCP (tests/cluster/nscluster.sh; needs root and ip netns, else that part says why it skips).
// tl runs as users run it: its data loader reads a synthetic CIFAR-10 set (no augmentation) and
// the reduction is the default, exact; PyTorch trains on one fixed random batch per process.
//
//   bench_ddp_vs_pytorch [--steps S] [--rounds R] [--models resnet18,resnet20] [--cluster]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/bench_support.h"

namespace {

struct Model {
  std::string name;
  std::string tlFlags;
};

// How processes are started: on this machine, or on namespace hosts h1 and h2.
struct Placement {
  std::string label;
  std::string tlMpirun;      // prefix of a 2-process tl-launch
  std::string torchCommand;  // prefix of the reference (takes the script's flags after it)
};

std::string flag(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

bool hasFlag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

std::string captureOrDie(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) text += buf;
  if (!p || pclose(p) != 0) {
    std::fprintf(stderr, "bench_ddp_vs_pytorch: command failed: %s\n%s", cmd.c_str(), text.c_str());
    std::exit(1);
  }
  return text;
}

double torchImagesPerSecond(const Placement& at, const std::string& model, int steps) {
  const std::string text = captureOrDie(at.torchCommand + " --model " + model + " --batch 32 --steps " +
                                        std::to_string(steps) + " --warmup 2 --threads 1 2>/dev/null");
  const auto line = text.substr(text.rfind('{'));
  return nlohmann::json::parse(line)["images_per_s"].get<double>();
}

double tlImagesPerSecond(const Placement& at, const std::string& root, const std::string& data,
                         const Model& model, int ests, int steps, const std::string& tag) {
  const std::string out = root + "/" + tag;
  tl::bench::runOrDie(at.tlMpirun + tl::bench::binDir() + "/tl-launch --dataset cifar10 --data-dir " + data +
                      " " + model.tlFlags + " --batch 32 --workers 1 --compute-threads 1 --augment off" +
                      " --log-every 0 --control-bind none --logical-workers " + std::to_string(ests) +
                      " --steps " + std::to_string(steps + 3) + " --output-dir " + out + " >" + out +
                      ".log 2>&1");
  return ests * 32 / tl::bench::medianStepSeconds(out, 3);
}

void compare(const Placement& at, const std::vector<Model>& models, const std::string& root,
             const std::string& data, int steps, int rounds) {
  std::printf("\n%s; median [95 %% CI] over %d alternating rounds\n", at.label.c_str(), rounds);
  std::printf("%-9s %-26s %-26s %-26s %-22s %-22s\n", "model", "PyTorch DDP images/s", "tl DDP mode images/s",
              "tl 4 ESTs images/s", "tl DDP / PyTorch", "tl 4 ESTs / PyTorch");
  for (const Model& m : models) {
    std::vector<std::vector<double>> ips(3);  // [PyTorch, tl 2x1, tl 2x2][round]
    for (int round = 0; round < rounds; ++round) {
      for (size_t c : tl::bench::roundOrder(3, size_t(round))) {
        const std::string tag = m.name + "_" + std::to_string(c) + "_" + std::to_string(round);
        ips[c].push_back(c == 0 ? torchImagesPerSecond(at, m.name, steps)
                                : tlImagesPerSecond(at, root, data, m, c == 1 ? 2 : 4, steps, tag));
      }
    }
    std::vector<double> ratio1, ratio2;
    for (int r = 0; r < rounds; ++r) {
      ratio1.push_back(ips[1][r] / ips[0][r]);
      ratio2.push_back(ips[2][r] / ips[0][r]);
    }
    using tl::bench::formatCi;
    using tl::bench::medianWithCi;
    std::printf("%-9s %-26s %-26s %-26s %-22s %-22s\n", m.name.c_str(), formatCi(medianWithCi(ips[0]), "%.1f").c_str(),
                formatCi(medianWithCi(ips[1]), "%.1f").c_str(), formatCi(medianWithCi(ips[2]), "%.1f").c_str(),
                formatCi(medianWithCi(ratio1)).c_str(), formatCi(medianWithCi(ratio2)).c_str());
    std::fflush(stdout);
  }
}

std::string nscluster() { return std::string(TL_BENCH_SOURCE_DIR) + "/../tests/cluster/nscluster.sh"; }

void takeClusterDown() { std::system((nscluster() + " down >/dev/null 2>&1").c_str()); }

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cluster") continue;
    if ((a == "--steps" || a == "--rounds" || a == "--models") && i + 1 < argc) {
      ++i;
      continue;
    }
    std::fprintf(stderr,
                 "bench_ddp_vs_pytorch: unknown flag or missing value: %s\n"
                 "usage: bench_ddp_vs_pytorch [--steps S] [--rounds R] [--models resnet18,resnet20] [--cluster]\n",
                 argv[i]);
    return 2;
  }
  const int steps = std::stoi(flag(argc, argv, "--steps", "5"));
  const int rounds = std::stoi(flag(argc, argv, "--rounds", "3"));
  const std::string modelList = flag(argc, argv, "--models", "resnet18,resnet20");
  std::vector<Model> models;
  if (modelList.find("resnet18") != std::string::npos) models.push_back({"resnet18", "--model resnet18"});
  if (modelList.find("resnet20") != std::string::npos) models.push_back({"resnet20", "--model resnet --depth 20"});
  if (models.empty() || steps < 1 || rounds < 1) {
    std::fprintf(stderr, "bench_ddp_vs_pytorch: --models takes resnet18 and/or resnet20; --steps and "
                         "--rounds must be positive\n");
    return 2;
  }
  if (std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "bench_ddp_vs_pytorch: /usr/bin/python3 cannot import torch.distributed "
                         "(Debian's python3-torch)\n");
    return 1;
  }
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  const std::string script = std::string(TL_BENCH_SOURCE_DIR) + "/reference/ddp_speed.py";
  // Outside /tmp: every namespace host has its own /tmp, but sees the build folder.
  const std::string root = tl::bench::binDir() + "/../bench-tmp/ddp_vs_pytorch";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  const std::string data = tl::bench::synthData(root, 2048);
  std::printf("tl vs PyTorch DDP: batch 32 per worker, 1 compute thread per process, %d timed steps per run\n",
              steps);

  compare({"2 processes on this machine (PyTorch: gloo over loopback; tl: Open MPI shared memory)",
           tl::bench::mpirun(2), "/usr/bin/python3 " + script + " --processes 2 --master-addr 127.0.0.1"},
          models, root, data, steps, rounds);

  if (hasFlag(argc, argv, "--cluster")) {
    const std::string check = nscluster() + " check 2>&1";
    FILE* p = popen(check.c_str(), "r");
    std::string why;
    char buf[256];
    while (p && fgets(buf, sizeof buf, p)) why += buf;
    if (!p || pclose(p) != 0) {
      std::printf("\ntwo namespace hosts: skipped (%s)\n", why.empty() ? "nscluster.sh check failed" : why.c_str());
      return 0;
    }
    setenv("NSC_OWNER", std::to_string(getpid()).c_str(), 1);
    std::string prefix = captureOrDie(nscluster() + " up 2");
    prefix.erase(prefix.find_last_not_of(" \n") + 1);
    setenv("NSC_PREFIX", prefix.c_str(), 1);
    std::atexit(takeClusterDown);
    const std::string onTwo = nscluster() + " mpirun --host h1:1,h2:1 -np 2 ";
    compare({"2 processes on two namespace hosts, one each, over TCP (veth and a bridge)", onTwo,
             onTwo + "-x GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 " + script + " --master-addr 10.231.0.1"},
            models, root, data, steps, rounds);
  }
  std::printf("\ntarget: tl images/s >= PyTorch DDP (ratio >= 1.00)\n");
  return 0;
}
