// The layout command: what every member applies at one step boundary, decided by the lead. It
// has one encoding, JSON: the lead broadcasts it to the members (runtime/comm/json_collectives.h;
// null when nothing changes) and sends it, with the ESTs per member before the change, to each
// process that joins in a grow (grow.h). Torch-free.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::elastic {

struct LayoutCommand {
  enum Kind : int64_t { None = 0, Placement = 1, Rescale = 2, Checkpoint = 3, Stop = 4 };
  Kind kind = None;
  int64_t joiners = 0;           // started processes that join, in order, after the members
  std::vector<int> target;       // ESTs per member of the new layout (members that stay, then joiners)
  std::vector<int> leave;        // 1 for each member (of the widened job) that leaves
  bool checkpoint = false;       // Stop: write one first
  std::vector<int> current;      // a joiner's copy of the ESTs per member before the change
  // Every member times its first two steps on the new layout and the lead writes them to
  // metrics.jsonl ("rescale_steps"): one small allgather two steps after the change
  // (TL_RESCALE_STEP_TIMES=1 on the lead; bench_inplace_rescale). Timing only.
  bool timeSteps = false;
  bool operator==(const LayoutCommand& o) const;
};

nlohmann::json toJson(const LayoutCommand& command);
// tl::Error naming the field when `json` is not a layout command.
LayoutCommand layoutCommandFromJson(const nlohmann::json& json);

}  // namespace tl::elastic
