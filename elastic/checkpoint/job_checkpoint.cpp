#include "elastic/checkpoint/job_checkpoint.h"

#include <ATen/ATen.h>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/check.h"
#include "common/files.h"
#include "common/version.h"
#include "dataload/dataset.h"
#include "elastic/checkpoint/checkpoint_file.h"
#include "runtime/models/model.h"
#include "runtime/models/model_names.h"
#include "runtime/optim/optimizer.h"

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

template <typename... Args>
[[noreturn]] void inconsistent(const std::string& path, const Args&... what) {
  inputError("checkpoint '", path, "' is inconsistent: ", what...);
}

bool isOneOf(const std::string& name, const std::vector<std::string>& known) {
  return std::find(known.begin(), known.end(), name) != known.end();
}

// The values of the definition that no flag could have given: a checkpoint holding them was
// edited (and re-hashed) or written by a broken tl. Messages blame the file, not a flag the user
// never gave.
void checkDefinition(const JobDefinition& d, const std::string& path) {
  if (d.batch < 1) inconsistent(path, "its job has batch ", d.batch, " (at least 1 per worker)");
  if (d.computeThreads < 1 || d.computeThreads > 256)
    inconsistent(path, "its job has compute threads ", d.computeThreads, " (1 to 256)");
  if (d.epochs < 0 || d.steps < 0)
    inconsistent(path, "its job has epochs ", d.epochs, " and steps ", d.steps,
                 " (neither may be negative)");
  if (d.imageSize < 0 || d.imageSize > 4096)
    inconsistent(path, "its job has image size ", d.imageSize, " (0 to 4096)");
  if (!isOneOf(d.model.arch, models::modelNames()) &&
      !(d.model.arch == models::kTorchScriptArch && !d.model.file.empty() && !d.model.fileSha256.empty()))
    inconsistent(path, "its job has model '", d.model.arch, "'");
  if (!isOneOf(d.optimizer.name, optim::optimizerNames()))
    inconsistent(path, "its job has optimizer '", d.optimizer.name, "'");
  if (!isOneOf(d.dataset, data::datasetKinds()))
    inconsistent(path, "its job has dataset '", d.dataset, "'");
  if (d.microBatches < 1 || d.batch % d.microBatches != 0)
    inconsistent(path, "its job has ", d.microBatches, " micro-batches for a batch of ", d.batch);
  if (!isOneOf(d.schedule.kind, {"constant", "step", "cosine", "linear"}))
    inconsistent(path, "its job has learning-rate schedule '", d.schedule.kind, "'");
}

// The job's length when it is given in steps (or is empty); -1 when it follows from the data.
int64_t stepsWithoutData(const JobDefinition& d) {
  return d.steps > 0 || d.epochs == 0 ? d.steps : -1;
}

// What the checkpoint says by itself: steps, cursors and generator states that fit the job.
void checkState(const JobCheckpoint& ck) {
  const std::string& path = ck.path;
  const int64_t steps = ck.state.stepsDone;
  if (steps < 0) inconsistent(path, "it is at step ", steps);
  const int64_t length = stepsWithoutData(ck.config);
  if (length >= 0 && steps > length)
    inconsistent(path, "it is at step ", steps, ", past the end of its job of ", length, " steps");
  const data::ShardCursor first = ck.state.contexts.at(0).cursor;
  const int64_t cpuStateBytes = at::detail::getDefaultCPUGenerator().get_state().numel();
  for (const est::EstContext& c : ck.state.contexts) {
    if (c.cursor.epoch < 0 || c.cursor.position < 0)
      inconsistent(path, "EST ", c.logicalRank, " is at epoch ", c.cursor.epoch, " position ",
                   c.cursor.position);
    // All ESTs step together over shards of one size, so their cursors are equal at every
    // step boundary.
    if (!(c.cursor == first))
      inconsistent(path, "EST ", c.logicalRank, " is at epoch ", c.cursor.epoch, " position ",
                   c.cursor.position, ", EST 0 at epoch ", first.epoch, " position ",
                   first.position, " (the ESTs of a job step together)");
    const at::Tensor& rng = c.cpuRngState;
    if (rng.scalar_type() != at::kByte || rng.dim() != 1 || rng.numel() != cpuStateBytes)
      inconsistent(path, "EST ", c.logicalRank, "'s generator state holds ", rng.numel(),
                   " bytes (", rng.dim(), "-d ", c10::toString(rng.scalar_type()),
                   "); a CPU generator's holds ", cpuStateBytes, " bytes");
  }
}

nlohmann::json toJson(const data::DataIdentity& id) {
  nlohmann::json files = nlohmann::json::array();
  for (const data::DataFile& f : id.files) files.push_back({f.name, f.bytes});
  return {{"kind", id.kind},
          {"dir", id.dir},
          {"file_count", id.fileCount},
          {"total_bytes", id.totalBytes},
          {"fingerprint", id.fingerprint},
          {"files", files}};
}

data::DataIdentity dataIdentityFromJson(const nlohmann::json& j) {
  data::DataIdentity id;
  id.kind = j.at("kind");
  id.dir = j.at("dir");
  id.fileCount = j.at("file_count");
  id.totalBytes = j.at("total_bytes");
  id.fingerprint = j.at("fingerprint");
  for (const auto& f : j.at("files"))
    id.files.push_back({f.at(0).get<std::string>(), f.at(1).get<int64_t>()});
  return id;
}

}  // namespace

void checkResumeData(const JobCheckpoint& ck, const JobConfig& job, bool warn) {
  if (!ck.data) {
    if (warn)
      spdlog::warn(
          "checkpoint '{}' was written by an older tl and does not say which data its job trained "
          "on: "
          "the data in '{}' is not checked",
          ck.path, job.dataDir);
    return;
  }
  const data::DataIdentity now = data::identifyData(job.dataset, job.dataDir);
  const std::string difference = data::describeDataDifference(*ck.data, now);
  if (difference.empty()) return;
  inputError("--resume: the data in '", now.dir, "' is not the data the job of checkpoint '",
             ck.path, "' trained on (then in '", ck.data->dir, "'): ", difference,
             "; give --data-dir the folder that holds the job's data");
}

void checkAgainstPlan(const JobCheckpoint& ck, int64_t stepsPerEpoch, int64_t totalSteps) {
  const int64_t steps = ck.state.stepsDone;
  if (steps > totalSteps)
    inconsistent(ck.path, "it is at step ", steps, ", past the end of its job of ", totalSteps,
                 " steps (", stepsPerEpoch, " per epoch on this data)");
  TL_CHECK_GE(stepsPerEpoch, 1);
  const data::ShardCursor expected{steps / stepsPerEpoch,
                                   (steps % stepsPerEpoch) * ck.config.batch};
  for (const est::EstContext& c : ck.state.contexts) {
    if (!(c.cursor == expected))
      inconsistent(ck.path, "after step ", steps, " (", stepsPerEpoch,
                   " per epoch on this data) its ESTs are at epoch ", expected.epoch, " position ",
                   expected.position, ", but EST ", c.logicalRank, " is at epoch ", c.cursor.epoch,
                   " position ", c.cursor.position);
  }
}

void restoreJob(est::EstExecutor& executor, const JobCheckpoint& ck) {
  checkAgainstPlan(ck, executor.plan().stepsPerEpoch, executor.plan().totalSteps);
  const auto current = models::stateDict(executor.model());
  const est::NamedTensors& saved = ck.state.model;
  if (current.size() != saved.size())
    inconsistent(ck.path, "it holds ", saved.size(), " model tensors, but its job's ",
                 ck.config.model.arch, " has ", current.size());
  for (size_t i = 0; i < current.size(); ++i) {
    const auto& [name, tensor] = current[i];
    const at::Tensor& s = saved[i].second;
    if (saved[i].first != name || s.sizes() != tensor.sizes() ||
        s.scalar_type() != tensor.scalar_type())
      inconsistent(ck.path, "model tensor ", i, " is '", saved[i].first, "' ", s.sizes(), " ",
                   c10::toString(s.scalar_type()), ", but the model's is '", name, "' ",
                   tensor.sizes(), " ", c10::toString(tensor.scalar_type()));
  }
  try {
    executor.restore(ck.state);
  } catch (const InputError& e) {  // the optimizer's and reducer's own checks
    inconsistent(ck.path, e.what());
  }
}

namespace {

// A manifest of another format version is refused, naming the tl that wrote it when the
// manifest says (checkpoints of tl before 0.9.0 do not).
void checkManifestVersion(const nlohmann::json& m, const std::string& path) {
  const nlohmann::json& version = m.at("version");
  if (version == kVersion) return;
  std::string writer;
  if (m.contains("tl_version") && m.at("tl_version").is_string())
    writer = ", written by tl " + m.at("tl_version").get<std::string>();
  const bool newer = version.is_number_integer() && version.get<int64_t>() > kVersion;
  inputError("checkpoint '", path, "' has format version ", version.dump(), writer, "; this tl (",
             tlVersion(), ") reads format version ", kVersion,
             newer ? ": resume it with that tl or a newer one" : "");
}

}  // namespace

void writeJobCheckpoint(const std::string& dir, const JobCheckpoint& ck) {
  ensureWritableDir(dir, "checkpoint directory");
  CheckpointData data;
  nlohmann::json& m = data.manifest;
  m["kind"] = kKind;
  m["version"] = kVersion;
  // Who wrote it, so that a reader too old for its format can say which tl it needs.
  m["tl_version"] = tlVersion();
  m["tl_git_commit"] = tlGitCommit();
  m["job"] = toJson(ck.config);
  m["logical_workers"] = ck.config.logicalWorkers;  // also in "job"; kept here for older readers
  m["placement"] = ck.placement;
  m["steps_done"] = ck.state.stepsDone;
  if (ck.data) m["data"] = toJson(*ck.data);
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
    checkManifestVersion(m, path);
    JobCheckpoint ck;
    ck.path = path;
    ck.config = jobConfigFromJson(m.at("job"));
    checkDefinition(ck.config, path);
    if (m.contains("data")) {
      ck.data = dataIdentityFromJson(m.at("data"));
      if (ck.data->kind != ck.config.dataset)
        inconsistent(path, "its job reads ", ck.config.dataset,
                     " data, but its data identity is of ", ck.data->kind);
      ck.config.dataDir = ck.data->dir;
    }
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
    checkState(ck);
    return ck;
  } catch (const nlohmann::json::exception& e) {
    inputError("checkpoint '", path, "' has a malformed manifest: ", e.what());
  }
}

}  // namespace tl::elastic
