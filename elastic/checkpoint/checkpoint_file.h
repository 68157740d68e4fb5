// The on-disk container for job checkpoints: a JSON manifest plus named tensors, written
// atomically and verified completely on read.
//
// Why our own format instead of torch::save: resuming must continue bit-for-bit, so tensors are
// stored as their exact raw bytes, and a truncated or damaged file must be a clear InputError
// naming the file, never a crash or a silent partial load. The layout is described in
// elastic/checkpoint/checkpoint_format.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace tl::elastic {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct CheckpointData {
  // Anything the caller wants to keep: job definition, step, placement-independent metadata.
  nlohmann::json manifest = nlohmann::json::object();
  // Names are unique. Tensors are CPU tensors of any libtorch dtype listed in
  // checkpoint_format.h, any shape (0-dim and empty included); they are saved as their values,
  // so views and non-contiguous tensors are fine.
  NamedTensors tensors;
  // The file this was read from; names the file in lookup errors. Empty when built in memory.
  std::string source;

  // The tensor called `name`; InputError naming `name` and the file when there is none.
  const at::Tensor& tensor(const std::string& name) const;
  bool hasTensor(const std::string& name) const;

  // The tensors whose names start with `prefix`, in stored order, with the prefix removed:
  // withPrefix("model/") turns "model/fc.weight" into "fc.weight".
  NamedTensors withPrefix(const std::string& prefix) const;
  // Appends `named` with `prefix` put in front of every name (the inverse of withPrefix).
  void addWithPrefix(const std::string& prefix, const NamedTensors& named);
};

// Writes `data` to `path` atomically (temporary file, fsync, rename, fsync of the folder): a
// crash or a full disk leaves the previous file at `path` untouched, never a torn one.
// InputError naming `path` when it cannot be written. tl::Error for a caller bug: duplicate
// tensor names, a tensor that is not a strided CPU tensor, an unsupported dtype.
void writeCheckpoint(const std::string& path, const CheckpointData& data);

// Reads and verifies `path`: magic, format version, length, SHA-256 over the whole file, and the
// consistency of the tensor index with the payload. Every problem is an InputError of the form
// "checkpoint '<path>' <what is wrong>". Returned tensors own their memory.
CheckpointData readCheckpoint(const std::string& path);

// Checkpoint directories: a job's checkpoint lives at <dir>/checkpoint.tl.
std::string checkpointPath(const std::string& dir);
bool hasCheckpoint(const std::string& dir);
// Creates `dir` if needed and writes the checkpoint into it atomically.
void writeCheckpointDir(const std::string& dir, const CheckpointData& data);
// Reads <dir>/checkpoint.tl. When there is none: InputError
// "<what> '<dir>': no checkpoint found (expected <dir>/checkpoint.tl)"; `what` names where the
// directory came from (the launcher's flag).
CheckpointData readCheckpointDir(const std::string& dir, const std::string& what = "--resume");

}  // namespace tl::elastic
