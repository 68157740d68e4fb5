#include "runtime/train/model_check.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "common/check.h"
#include "dataload/batch_tensors.h"
#include "runtime/models/torchscript_model.h"

namespace tl::train {
namespace {

std::string describe(const at::Tensor& t) { return tl::str(c10::toString(t.scalar_type()), " ", t.sizes()); }

// The line of a libtorch error that says what went wrong: TorchScript errors end with it,
// after the traceback of the script.
std::string lastLine(const std::exception& e) {
  const auto* c10Error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10Error ? c10Error->what_without_backtrace() : e.what();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const size_t cut = text.rfind('\n');
  return cut == std::string::npos ? text : text.substr(cut + 1);
}

// Restores the default CPU generator's state when the scope ends, however it ends.
class KeepGenerator {
 public:
  KeepGenerator() : generator_(at::detail::getDefaultCPUGenerator()), state_(generator_.get_state()) {}
  ~KeepGenerator() { generator_.set_state(state_); }

 private:
  at::Generator generator_;
  at::Tensor state_;
};

}  // namespace

void checkModelOnData(models::Model& model, const models::ModelConfig& config,
                      const data::SampleSource& train, c10::Device device) {
  if (config.file.empty()) return;
  const std::string what = tl::str("--model-file '", config.file, "'");
  const int64_t n = std::min<int64_t>(2, train.size());
  TL_REQUIRE(n >= 1, what, ": the training data has no samples to try the module on");
  const data::SampleSpec in = train.inputSpec();
  const data::SampleSpec tg = train.targetSpec();
  at::Tensor inputs = at::empty(data::batchShape(n, in), data::scalarType(in.dtype));
  at::Tensor labels = at::empty(data::batchShape(n, tg), data::scalarType(tg.dtype));
  std::vector<uint8_t> scratch;
  for (int64_t i = 0; i < n; ++i)
    train.loadSample(0, i, static_cast<uint8_t*>(inputs.data_ptr()) + i * in.bytes(),
                     static_cast<uint8_t*>(labels.data_ptr()) + i * tg.bytes(), scratch);
  inputs = inputs.to(device);
  labels = labels.to(device);

  at::Tensor out;
  {
    KeepGenerator keep;
    at::NoGradGuard noGrad;
    model.eval();
    // Token data are tried on ids 0 first, so that a failure of the real batch or of one of the
    // data's largest id (as input and as target) can only be the ids: an id beyond the module's
    // vocabulary would otherwise fail at some step of the run instead of here.
    const data::SampleSource::TokenRange tokens = train.tokenRange();
    const auto forward = [&](const at::Tensor& x, const at::Tensor& y) {
      return model.returnsLoss() ? model.forwardLoss(x, y) : model.forward(x);
    };
    try {
      out = tokens.max >= 0 ? forward(at::zeros_like(inputs), at::zeros_like(labels)) : forward(inputs, labels);
    } catch (const InputError&) {
      model.train();
      throw;
    } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
      model.train();
      inputError(what, ": ", models::forwardSignature(model), " does not accept the dataset's batch (inputs ",
                 describe(inputs), model.returnsLoss() ? tl::str(", targets ", describe(labels)) : "",
                 "); the module says: ", lastLine(e));
    }
    if (tokens.max >= 0) {
      try {
        out = forward(inputs, labels);
        forward(at::full_like(inputs, tokens.max), at::full_like(labels, tokens.max));
      } catch (const std::exception& e) {
        model.train();
        inputError(what, ": token file '", tokens.file, "' holds token id ", tokens.max,
                   ", which the module does not take (is its vocabulary smaller than ", tokens.max + 1,
                   "?); the module says: ", lastLine(e));
      }
    }
    model.train();
  }
  TL_REQUIRE(at::isFloatingType(out.scalar_type()), what, ": forward returned ", describe(out),
             ", not floating-point ", model.returnsLoss() ? "loss" : "scores");
  if (model.returnsLoss()) {
    TL_REQUIRE(out.dim() == 0, what, ": with --model-returns loss forward must return a scalar loss, but it returned ",
               describe(out), " for a batch of ", n);
    return;
  }
  TL_REQUIRE(out.dim() >= 1 && out.size(0) == n, what, ": forward returned ", describe(out), " for a batch of ", n,
             " (the first dimension must be the batch)");
  if (config.loss == "mse") return;
  const int classes = train.numClasses();
  const int64_t scores = out.dim() >= 2 ? out.size(-1) : 0;  // [B, C] or, per position, [B, ..., C]
  const data::SampleSource::TokenRange tokens = train.tokenRange();
  TL_REQUIRE(scores > tokens.max, what, ": token file '", tokens.file, "' holds token id ", tokens.max,
             ", but forward returned ", describe(out), " (scores for ", scores, " tokens)");
  TL_REQUIRE(scores >= classes, what, ": labels out of range: the dataset has ", classes, " classes (labels 0 to ",
             classes - 1, "), but forward returned ", describe(out), " (scores for ", scores, " classes)");
}

}  // namespace tl::train
