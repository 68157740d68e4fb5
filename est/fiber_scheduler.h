// ESTs as Boost.Fiber fibers on the training thread, with the context switch in one place.
//
// Threading model: every fiber of an EstFibers runs on the thread that created it; there is
// no preemption. The scheduling algorithm installed on that thread keeps a FIFO ready queue and,
// whenever the fiber it picks belongs to a different EST than the one that ran last, calls
// the ContextSwitcher: switchOut(outgoing) then switchIn(incoming). That is the only place
// where per-EST state (generator states and the like) is swapped. The thread's main fiber
// belongs to no EST: when it runs, every EST's state is saved in its context.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

namespace tl::est {

class ContextSwitcher {
 public:
  virtual ~ContextSwitcher() = default;
  // Saves the live per-EST state into EST `est`'s context.
  virtual void switchOut(int est) = 0;
  // Installs EST `est`'s context as the live state.
  virtual void switchIn(int est) = 0;
};

class EstFibers {
 public:
  // Stack size per fiber: libtorch's forward and backward need deep stacks. Stacks are
  // mmap'ed with a guard page, so an overflow faults at once instead of corrupting a
  // neighbour, and untouched pages cost no memory.
  static constexpr size_t kDefaultStackBytes = size_t(16) << 20;

  explicit EstFibers(ContextSwitcher& switcher, size_t stackBytes = kDefaultStackBytes);
  ~EstFibers();  // joins every fiber; they must have been told to finish
  EstFibers(const EstFibers&) = delete;
  EstFibers& operator=(const EstFibers&) = delete;

  // Starts a fiber for EST `est`. It first runs when the calling fiber blocks or yields.
  void launch(int est, std::function<void()> body);
  // Waits for every launched fiber to return.
  void joinAll();
  // The EST whose fiber is running, or -1 on the main fiber.
  static int currentEst();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl::est
