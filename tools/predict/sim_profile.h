// Job profiles for tl-sim from tl-predict: the samples/s of a model on 1..n devices of a kind,
// from the analytic step time (measured pass + gradient allreduce at the link bandwidth), as
// rows of tl-sim's profile CSV (`model,kind,gpus,samples_per_s`, tools/sched/sim/profiles.h).
#pragma once

#include <string>
#include <vector>

#include "tools/predict/learned.h"

namespace tl::predict {

// `name`: the model name the trace's jobs use (e.g. resnet20); `kind`: the device kind.
// InputError on an empty name or kind, or a device count < 1.
std::string simProfileCsv(const JobShape& shape, const ModelTrace& trace, const std::string& name,
                          const std::string& kind, const std::vector<int64_t>& gpus);

}  // namespace tl::predict
