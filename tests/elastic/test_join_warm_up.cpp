// Issue 43: the warm-up a process runs before it joins a running job (warmUpForJoin) leaves
// everything that defines the job's bits as it found it, for a built-in model (BatchNorm and
// dropout) and for a TorchScript module (dropout drawn from the default generator), and a
// warmed-up executor trains to the same parameters, bit for bit, as a cold one.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "common/sha256.h"
#include "dataload/synthetic.h"
#include "elastic/rescale/join_running_job.h"
#include "est/est_context.h"
#include "est/executor_builder.h"
#include "runtime/models/model_names.h"
#include "runtime/train/metrics.h"
#include "runtime/train/step.h"
#include "tests/est/layout_runs.h"
#include "tests/support/in_memory_ranks.h"
#include "tests/support/run_command.h"

namespace tl::elastic {
namespace {

constexpr int kEsts = 4;

const std::string& dataDir() {
  static const std::string dir = est::testing::syntheticCifar("join_warm_up_data", 64, 5);
  return dir;
}

// A TorchScript module on CIFAR-sized images with dropout, as torch.jit.script would save it.
const std::string& scriptedModule() {
  static const std::string path = [] {
    const std::string p = tl::testing::freshDir("join_warm_up_module") + "/linear_dropout.pt";
    torch::jit::Module m("LinearDropout");
    m.register_attribute("training", c10::BoolType::get(), true);
    torch::manual_seed(1);
    m.register_parameter("weight", (torch::randn({10, 3 * 32 * 32}) * 0.01).set_requires_grad(true), false);
    m.register_parameter("bias", torch::zeros({10}).set_requires_grad(true), false);
    m.define(R"(
def forward(self, x):
    h = torch.flatten(x, 1)
    h = torch.dropout(h, 0.3, self.training)
    return torch.matmul(h, self.weight.t()) + self.bias
)");
    m.save(p);
    return p;
  }();
  return path;
}

JobConfig job(bool torchScript) {
  JobConfig c = est::testing::layoutTestJob(dataDir(), "exact");
  c.steps = 3;
  if (torchScript) {
    c.model.arch = models::kTorchScriptArch;
    c.model.file = scriptedModule();
  }
  return c;
}

// Everything a JobState holds (model, optimizer, reducer, contexts) as one hash.
std::string stateSha(est::EstExecutor& executor) {
  const est::JobState s = executor.captureState(0);
  Sha256 h;
  for (const auto* part : {&s.model, &s.optimizer, &s.reducer}) {
    for (const auto& [name, tensor] : *part) {
      h.update(name.data(), name.size());
      at::Tensor t = tensor.contiguous();
      h.update(t.data_ptr(), size_t(t.numel() * t.element_size()));
    }
  }
  for (const auto& c : s.contexts) {
    const auto bytes = est::packContext(c);
    h.update(bytes.data(), bytes.size());
  }
  return h.hexDigest();
}

bool sameGeneratorState(const at::Tensor& a) {
  return at::equal(a, at::detail::getDefaultCPUGenerator().get_state());
}

void expectWarmUpLeavesTheBits(bool torchScript) {
  std::string warmSha, coldSha;
  tl::testing::runInMemoryRanks(1, [&](comm::Communicator& world) {
    auto warm = est::ExecutorBuilder(job(torchScript)).layout(est::Placement::even(kEsts, 1), world, world).build();
    const std::string before = stateSha(*warm);
    const at::Tensor generator = at::detail::getDefaultCPUGenerator().get_state();
    warmUpForJoin(*warm);
    EXPECT_EQ(stateSha(*warm), before) << "the warm-up changed the job's state";
    EXPECT_TRUE(sameGeneratorState(generator)) << "the warm-up moved the default generator";
    for (const at::Tensor& p : warm->model().parameters()) {
      ASSERT_TRUE(p.grad().defined()) << "the warm-up should leave the gradients allocated";
      EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
      EXPECT_FALSE(p.grad().requires_grad());
    }
    train::MetricsLog metrics;
    warmSha = warm->run(metrics).paramsSha256;
  });
  tl::testing::runInMemoryRanks(1, [&](comm::Communicator& world) {
    auto cold = est::ExecutorBuilder(job(torchScript)).layout(est::Placement::even(kEsts, 1), world, world).build();
    train::MetricsLog metrics;
    coldSha = cold->run(metrics).paramsSha256;
  });
  EXPECT_FALSE(warmSha.empty());
  EXPECT_EQ(warmSha, coldSha) << "a warmed-up executor trained to other bits";
}

TEST(JoinWarmUp, BuiltInModelWithBatchNormAndDropoutKeepsTheBits) { expectWarmUpLeavesTheBits(false); }

TEST(JoinWarmUp, TorchScriptModuleWithDropoutKeepsTheBits) { expectWarmUpLeavesTheBits(true); }

}  // namespace
}  // namespace tl::elastic
