#include "tools/predict/sim_profile.h"

#include <cstdio>

#include "common/check.h"

namespace tl::predict {

std::string simProfileCsv(const JobShape& shape, const ModelTrace& trace, const std::string& name,
                          const std::string& kind, const std::vector<int64_t>& gpus) {
  TL_REQUIRE(!name.empty() && name.find(',') == std::string::npos, "--name: must be a non-empty name without commas");
  TL_REQUIRE(!kind.empty() && kind.find(',') == std::string::npos, "--kind: must be a non-empty name without commas");
  TL_REQUIRE(!gpus.empty(), "--gpus: name at least one device count");
  std::string out = "# tl-predict analytic profile: " + modelKey(shape.model) + " batch " +
                    std::to_string(shape.batch) + " per device, pass " + std::to_string(trace.forwardBackwardSeconds) +
                    " s, bandwidth " + std::to_string(shape.bandwidthBytesPerSecond / 1e9) + " GB/s\n";
  out += "model,kind,gpus,samples_per_s\n";
  for (int64_t n : gpus) {
    TL_REQUIRE(n >= 1 && n <= 1 << 20, "--gpus: device counts must be at least 1, got ", n);
    JobShape s = shape;
    s.processes = int(n);
    s.estsPerProcess = 1;
    const double stepSeconds = analyticStep(s, trace).step;  // pass + allreduce
    TL_REQUIRE(stepSeconds > 0, "the traced pass took no measurable time: cannot derive a rate");
    char row[256];
    std::snprintf(row, sizeof row, "%s,%s,%lld,%.3f\n", name.c_str(), kind.c_str(), (long long)n,
                  double(n) * double(shape.batch) / stepSeconds);
    out += row;
  }
  return out;
}

}  // namespace tl::predict
