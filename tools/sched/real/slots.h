// tl-sched's process slots: the "GPUs" a real-mode scheduler hands out. A slot holds at most
// one process of one job at a time. Slots come in kinds; on this machine a kind is an emulated
// speed (tl-launch --emulate-slowdown), on a cluster it would be a set of hosts with one GPU
// model. The table is tl-sched's own record of what it asked for and what jobs confirmed.
#pragma once

#include <string>
#include <vector>

#include "tools/sched/sim/workload.h"

namespace tl::sched {

struct SlotKind {
  std::string name;
  int count = 0;
  double slowdown = 1;  // >= 1: each EST's compute on this kind takes this many times longer
};

// "fast:2,slow:2:2" (NAME:COUNT[:SLOWDOWN]) -> kinds. InputError naming `what` and the bad item.
std::vector<SlotKind> parseSlotKinds(const std::string& text, const std::string& what);

class SlotTable {
 public:
  explicit SlotTable(std::vector<SlotKind> kinds);

  const std::vector<SlotKind>& kinds() const { return kinds_; }
  // The kinds as the policies see a cluster (one GPU per slot).
  ClusterSpec cluster() const;
  int size() const { return int(kindOfSlot_.size()); }
  int kindOf(int slot) const;
  // The job holding (or about to hold) the slot; empty when free.
  const std::string& owner(int slot) const;
  int freeOf(int kind) const;
  // `n` free slots of `kind` (the lowest first), now owned by `job`. Error when fewer are free.
  std::vector<int> take(int kind, int n, const std::string& job);
  // Gives a slot back. Error when `job` does not hold it.
  void release(int slot, const std::string& job);

 private:
  std::vector<SlotKind> kinds_;
  std::vector<int> kindOfSlot_;
  std::vector<std::string> owner_;
};

}  // namespace tl::sched
