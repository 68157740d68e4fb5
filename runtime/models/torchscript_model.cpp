#include "runtime/models/torchscript_model.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <sstream>

#include "common/check.h"
#include "common/files.h"
#include "common/sha256.h"
#include "runtime/models/model_names.h"

namespace tl::models {
namespace {

// The first line of a libtorch error, without its C++ backtrace.
std::string firstLine(const c10::Error& e) {
  const std::string text = e.what_without_backtrace();
  return text.substr(0, text.find('\n'));
}

class TorchScriptModel final : public Model {
 public:
  TorchScriptModel(torch::jit::Module module, bool returnsLoss)
      : module_(std::move(module)), returnsLoss_(returnsLoss) {
    mirror(module_, *this);
  }

  torch::Tensor forward(torch::Tensor x) override { return call({std::move(x)}); }

  torch::Tensor forwardLoss(torch::Tensor inputs, torch::Tensor targets) override {
    return call({std::move(inputs), std::move(targets)});
  }

  bool returnsLoss() const override { return returnsLoss_; }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

  const torch::jit::Module& script() const { return module_; }

 private:
  // The module's own parameters, then its own buffers, then each child: PyTorch's state_dict
  // order, as stateDict() walks it. The tensors are the module's (not copies).
  static void mirror(const torch::jit::Module& from, torch::nn::Module& to) {
    for (const auto& p : from.named_parameters(/*recurse=*/false))
      if (p.value.defined()) to.register_parameter(p.name, p.value, p.value.requires_grad());
    for (const auto& b : from.named_buffers(/*recurse=*/false))
      if (b.value.defined()) to.register_buffer(b.name, b.value);
    for (const auto& c : from.named_children()) {
      auto child = std::make_shared<torch::nn::Module>();
      mirror(c.value, *child);
      to.register_module(c.name, child);
    }
  }

  torch::Tensor call(std::vector<c10::IValue> inputs) {
    // No graph optimisation (fusion, symbolic differentiation): the ops run as in PyTorch's
    // eager mode, so the bits do not depend on how often this process has run the graph.
    torch::jit::GraphOptimizerEnabledGuard plain(false);
    c10::IValue out = module_.forward(std::move(inputs));
    if (out.isTuple() && !out.toTupleRef().elements().empty()) out = out.toTupleRef().elements()[0];
    TL_REQUIRE(out.isTensor(), "--model-file: forward returned a ", out.tagKind(), ", not a tensor");
    return out.toTensor();
  }

  torch::jit::Module module_;
  bool returnsLoss_;
};

bool isZipArchive(const std::string& bytes) { return bytes.rfind("PK\x03\x04", 0) == 0; }

std::string sha256Of(const std::string& bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hexDigest();
}

// Until 2026-12-06 tl recorded a module's bytes in hex where it meant their SHA-256 (in
// summary.json and checkpoints): a job resumed from such a checkpoint is checked against that.
bool recordedByOlderTl(const std::string& recorded) { return recorded.size() != 64; }

}  // namespace

std::string fileSha256(const std::string& path, const std::string& flag) {
  TL_REQUIRE(fileExists(path), flag, " '", path, "': no such file");
  std::string bytes;
  try {
    bytes = readFile(path);
  } catch (const InputError& e) {
    inputError(flag, " '", path, "': cannot be read: ", e.what());
  }
  return sha256Of(bytes);
}

std::shared_ptr<Model> loadTorchScriptModel(const ModelConfig& config) {
  const std::string& path = config.file;
  const bool older = !config.fileSha256.empty() && recordedByOlderTl(config.fileSha256);
  // The job's module, as the messages name it.
  const std::string recorded =
      older ? "the module recorded by an older tl" : "the module of SHA-256 " + config.fileSha256;
  TL_REQUIRE(fileExists(path), "--model-file '", path, "': no such file",
             config.fileSha256.empty()
                 ? ""
                 : " (the job was defined with " + recorded + "; give --model-file that module)");
  const std::string bytes = readFile(path);
  const std::string sha = sha256Of(bytes);
  const bool same = config.fileSha256.empty() ||
                    (older ? Sha256::hex(bytes.data(), bytes.size()) == config.fileSha256
                           : sha == config.fileSha256);
  TL_REQUIRE(same, "--model-file '", path, "' has SHA-256 ", sha, ", but the job was defined with ",
             recorded, ": give --model-file the module the job started with");
  TL_REQUIRE(isZipArchive(bytes), "--model-file '", path,
             "' is not a TorchScript module (not a zip archive); export one with "
             "torch.jit.script(model).save(path) or torch.jit.trace(model, example).save(path)");
  torch::jit::Module module;
  try {
    std::istringstream in(bytes);
    module = torch::jit::load(in, torch::kCPU);
  } catch (const c10::Error& e) {
    inputError("--model-file '", path,
               "' is not a TorchScript module (a state dict or pickle from torch.save, or a truncated "
               "or damaged archive; export with torch.jit.script(model).save(path)): ",
               firstLine(e));
  }
  TL_REQUIRE(module.find_method("forward").has_value(), "--model-file '", path,
             "': the module has no forward method");
  int64_t trainable = 0;
  for (const auto& p : module.parameters()) trainable += p.requires_grad() ? p.numel() : 0;
  TL_REQUIRE(trainable > 0, "--model-file '", path, "': the module has no trainable parameters");
  auto model = std::make_shared<TorchScriptModel>(std::move(module), config.returnsLoss);
  model->train(true);
  return model;
}

std::string forwardSignature(const Model& model) {
  const auto* scripted = dynamic_cast<const TorchScriptModel*>(&model);
  if (!scripted) return "";
  std::ostringstream out;
  out << scripted->script().get_method("forward").function().getSchema();
  return out.str();
}

bool saveTorchScript(const Model& model, const std::string& path) {
  const auto* scripted = dynamic_cast<const TorchScriptModel*>(&model);
  if (!scripted) return false;
  std::ostringstream out;
  try {
    scripted->script().save(out);
  } catch (const c10::Error& e) {
    inputError("--save-model: cannot write the TorchScript module to '", path, "': ", firstLine(e));
  }
  const std::string bytes = out.str();
  writeFileAtomic(path, bytes);
  return true;
}

std::string torchScriptSavePath(const std::string& stateDictPath) {
  const std::string suffix = ".pt";
  const bool endsInPt = stateDictPath.size() > suffix.size() &&
                        stateDictPath.compare(stateDictPath.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (endsInPt ? stateDictPath.substr(0, stateDictPath.size() - suffix.size()) : stateDictPath) +
         ".torchscript.pt";
}

}  // namespace tl::models
