// Test support: run a shell command with a time limit and capture what it printed.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tl::testing {

struct CommandResult {
  int exitCode = -1;     // 124 when the time limit killed it
  std::string out;
  std::string err;
  double seconds = 0;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh, empty folder under $TL_TEST_TMP (set by CTest) or /tmp.
inline std::string freshDir(const std::string& name) {
  const char* base = std::getenv("TL_TEST_TMP");
  auto dir = std::filesystem::path(base ? base : "/tmp/tl-test") / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline CommandResult runCommand(const std::string& command, int timeoutSeconds,
                                const std::string& scratchDir) {
  std::string outPath = scratchDir + "/cmd.out", errPath = scratchDir + "/cmd.err";
  std::string full = "timeout -k 5 " + std::to_string(timeoutSeconds) + " " + command + " >" +
                     outPath + " 2>" + errPath;
  auto t0 = std::chrono::steady_clock::now();
  int status = std::system(full.c_str());
  CommandResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  return r;
}

inline int countOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

#ifdef TL_MPIEXEC
// "mpirun --oversubscribe -np N " (the root/oversubscribe consent comes from CTest's env).
inline std::string mpirunPrefix(int np) {
  return std::string(TL_MPIEXEC) + " --oversubscribe -np " + std::to_string(np) + " ";
}
#endif

#ifdef TL_DATA_BIN
// Writes synthetic CIFAR-format data with `tl-data synth` into a fresh folder `name`.
inline std::string makeSyntheticCifar(const std::string& name, int train, int test, int seed,
                                      std::string* error) {
  std::string dir = freshDir(name);
  auto r = runCommand(std::string(TL_DATA_BIN) + " synth --out " + dir + " --train " + std::to_string(train) +
                          " --test " + std::to_string(test) + " --seed " + std::to_string(seed),
                      120, freshDir(name + "_gen"));
  if (r.exitCode != 0) *error = r.err;
  return dir;
}
#endif

}  // namespace tl::testing
