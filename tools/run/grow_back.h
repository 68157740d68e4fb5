// tl-run's grow-back after an in-place recovery: the job went on with fewer processes, and
// tl-run asks it, over its authenticated control channel (as `tl-ctl rescale --processes P`
// would), to grow back in place to the launch's process count. Torch-free.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace tl::run {

class GrowBack {
 public:
  // `outputDir`: the job's --output-dir (metrics.jsonl, control.json); `processes`: the launch's
  // -np, which the job grows back to.
  GrowBack(std::string outputDir, int processes);
  ~GrowBack();  // a request still in flight is left to finish on its own (it only prints)
  GrowBack(const GrowBack&) = delete;
  GrowBack& operator=(const GrowBack&) = delete;

  // From tl-run's watch loop (every 50 ms; reads at most every 0.5 s): a new in-place `recovery`
  // record in metrics.jsonl (one written since this launch began) sends one grow request, on
  // its own thread, and prints its outcome.
  void poll();

 private:
  struct Shared {
    std::string outputDir;
    int processes = 0;
    std::atomic<bool> busy{false};
  };
  static void request(const std::shared_ptr<Shared>& shared);

  std::shared_ptr<Shared> shared_;
  std::uintmax_t offset_ = 0;  // metrics.jsonl read up to here
  std::string partial_;        // a line not yet ended
  int recoveriesSeen_ = 0;
  int requested_ = 0;
  double lastPoll_ = 0;
  std::thread thread_;
};

}  // namespace tl::run
