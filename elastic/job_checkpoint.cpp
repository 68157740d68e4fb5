#include "elastic/job_checkpoint.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/files.h"
#include "elastic/checkpoint_file.h"

namespace tl::elastic {
namespace {

constexpr const char* kKind = "tl-job";
constexpr int kVersion = 1;

void addAll(CheckpointData& data, const std::string& prefix, const est::NamedTensors& tensors,
            nlohmann::json& names) {
  names = nlohmann::json::array();
  for (const auto& [name, t] : tensors) {
    data.tensors.emplace_back(prefix + name, t);
    names.push_back(name);
  }
}

est::NamedTensors takeAll(const CheckpointData& data, const std::string& prefix, const nlohmann::json& names) {
  est::NamedTensors out;
  for (const auto& name : names) out.emplace_back(name.get<std::string>(), data.tensor(prefix + name.get<std::string>()));
  return out;
}

}  // namespace

void writeJobCheckpoint(const std::string& dir, const JobCheckpoint& ck) {
  ensureWritableDir(dir, "checkpoint directory");
  CheckpointData data;
  nlohmann::json& m = data.manifest;
  m["kind"] = kKind;
  m["version"] = kVersion;
  m["job"] = toJson(ck.config);
  m["logical_workers"] = ck.config.logicalWorkers;  // also in "job"; kept here for older readers
  m["placement"] = ck.placement;
  m["steps_done"] = ck.state.stepsDone;
  addAll(data, "model/", ck.state.model, m["model"]);
  addAll(data, "optimizer/", ck.state.optimizer, m["optimizer"]);
  addAll(data, "reducer/", ck.state.reducer, m["reducer"]);
  TL_CHECK_EQ(int(ck.state.contexts.size()), ck.config.logicalWorkers, "checkpoint needs every EST's context");
  nlohmann::json ests = nlohmann::json::array();
  for (const auto& c : ck.state.contexts) {
    const std::string p = "est/" + std::to_string(c.logicalRank) + "/";
    data.tensors.emplace_back(p + "cpu_rng", c.cpuRngState);
    if (c.deviceRngState.defined()) data.tensors.emplace_back(p + "device_rng", c.deviceRngState);
    ests.push_back({{"rank", c.logicalRank},
                    {"epoch", c.cursor.epoch},
                    {"position", c.cursor.position},
                    {"device_rng", c.deviceRngState.defined()}});
  }
  m["ests"] = ests;
  writeCheckpoint(checkpointPath(dir), data);
}

JobCheckpoint readJobCheckpoint(const std::string& dir) {
  const std::string path = checkpointPath(dir);
  CheckpointData data = readCheckpointDir(dir);
  const nlohmann::json& m = data.manifest;
  try {
    TL_REQUIRE(m.at("kind") == kKind, "checkpoint '", path, "' is not a tl job checkpoint");
    TL_REQUIRE(m.at("version") == kVersion, "checkpoint '", path, "' has version ", m.at("version").dump(),
               "; this tl reads version ", kVersion);
    JobCheckpoint ck;
    ck.config = jobConfigFromJson(m.at("job"));
    const int logicalWorkers = m.at("logical_workers");
    TL_REQUIRE(ck.config.logicalWorkers == 0 || ck.config.logicalWorkers == logicalWorkers, "checkpoint '", path,
               "' names two different logical-worker counts");
    ck.config.logicalWorkers = logicalWorkers;
    ck.placement = m.at("placement");
    ck.state.stepsDone = m.at("steps_done");
    ck.state.model = takeAll(data, "model/", m.at("model"));
    ck.state.optimizer = takeAll(data, "optimizer/", m.at("optimizer"));
    ck.state.reducer = takeAll(data, "reducer/", m.at("reducer"));
    const auto& ests = m.at("ests");
    TL_REQUIRE(logicalWorkers >= 1 && int(ests.size()) == logicalWorkers, "checkpoint '", path, "' holds ",
               ests.size(), " EST contexts for ", logicalWorkers, " logical workers");
    for (int r = 0; r < logicalWorkers; ++r) {
      const auto& e = ests.at(r);
      TL_REQUIRE(e.at("rank") == r, "checkpoint '", path, "' lists EST contexts out of order");
      est::EstContext c;
      c.logicalRank = r;
      c.cursor.epoch = e.at("epoch");
      c.cursor.position = e.at("position");
      const std::string p = "est/" + std::to_string(r) + "/";
      c.cpuRngState = data.tensor(p + "cpu_rng");
      if (e.at("device_rng").get<bool>()) c.deviceRngState = data.tensor(p + "device_rng");
      ck.state.contexts.push_back(std::move(c));
    }
    return ck;
  } catch (const nlohmann::json::exception& e) {
    inputError("checkpoint '", path, "' has a malformed manifest: ", e.what());
  }
}

}  // namespace tl::elastic
