// createOptimizer: hyper-parameter validation (PyTorch's own checks, plus options that do not
// apply to the chosen optimizer) and dispatch to the implementations.
#include "runtime/optim/optimizer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/check.h"
#include "runtime/optim/optimizers.h"

namespace tl::optim {

void Optimizer::zeroGrad() {
  // PyTorch 1.13's zero_grad(set_to_none=False): keep the gradient tensors, cut them from any
  // graph and fill them with zeros.
  for (auto& param : params_) {
    at::Tensor& grad = param.mutable_grad();
    if (!grad.defined()) continue;
    grad.detach_();
    grad.zero_();
  }
}

std::vector<std::string> optimizerNames() {
  return {"adadelta", "adagrad", "adam", "adamw", "nesterov", "sgd"};
}

namespace {

double defaultEps(const std::string& name) {
  if (name == "adagrad") return 1e-10;
  if (name == "adadelta") return 1e-6;
  return 1e-8;  // adam, adamw
}

// Rejects NaN and infinities along with out-of-range values: every check is "finite and ...".
void requireAtLeast(const std::string& optimizer, const char* flag, double value, double low) {
  TL_REQUIRE(std::isfinite(value) && value >= low, "optimizer ", optimizer, ": ", flag,
             " must be >= ", low, " (got ", value, ")");
}

void requireUnitInterval(const std::string& optimizer, const char* flag, double value,
                         bool includeOne) {
  TL_REQUIRE(std::isfinite(value) && value >= 0 && (includeOne ? value <= 1 : value < 1),
             "optimizer ", optimizer, ": ", flag, " must be in [0, 1", (includeOne ? "]" : ")"),
             " (got ", value, ")");
}

void requireUnused(const std::string& optimizer, const char* flag, double value, double unset,
                   const char* usedBy) {
  TL_REQUIRE(value == unset, "optimizer ", optimizer, ": ", flag, " does not apply (it is for ",
             usedBy, "; got ", value, ")");
}

OptimizerOptions validated(OptimizerOptions o) {
  const auto names = optimizerNames();
  std::string choices;
  for (const auto& n : names) choices += (choices.empty() ? "" : ", ") + n;
  TL_REQUIRE(std::count(names.begin(), names.end(), o.name), "unknown optimizer '", o.name,
             "'; choose one of: ", choices);
  const std::string& name = o.name;
  const bool isSgd = name == "sgd" || name == "nesterov";
  requireAtLeast(name, "--lr", o.lr, 0);
  requireAtLeast(name, "--weight-decay", o.weightDecay, 0);
  if (isSgd) {
    requireAtLeast(name, "--momentum", o.momentum, 0);
    requireUnitInterval(name, "--dampening", o.dampening, /*includeOne=*/true);
    TL_REQUIRE(name != "nesterov" || (o.momentum > 0 && o.dampening == 0), "optimizer nesterov",
               " needs --momentum > 0 and --dampening 0 (got momentum ", o.momentum, ", dampening ",
               o.dampening, ")");
    requireUnused(name, "--eps", o.eps, -1, "adam, adamw, adagrad, adadelta");
  } else {
    // --momentum is not rejected here: tl-launch gives it a default (0.9) for every
    // optimizer, and a value the user did not type must not fail the job. It is unused.
    requireUnused(name, "--dampening", o.dampening, 0, "sgd");
    if (o.eps < 0 && !std::isnan(o.eps)) o.eps = defaultEps(name);
    requireAtLeast(name, "--eps", o.eps, 0);
  }
  if (name == "adam" || name == "adamw") {
    requireUnitInterval(name, "--beta1", o.beta1, /*includeOne=*/false);
    requireUnitInterval(name, "--beta2", o.beta2, /*includeOne=*/false);
  }
  if (name == "adadelta") requireUnitInterval(name, "--rho", o.rho, /*includeOne=*/true);
  if (name == "adagrad") {
    requireAtLeast(name, "--lr-decay", o.lrDecay, 0);
    requireAtLeast(name, "--initial-accumulator", o.initialAccumulator, 0);
  } else {
    requireUnused(name, "--lr-decay", o.lrDecay, 0, "adagrad");
    requireUnused(name, "--initial-accumulator", o.initialAccumulator, 0, "adagrad");
  }
  return o;
}

void checkParams(const std::string& optimizer, const std::vector<at::Tensor>& params) {
  TL_REQUIRE(!params.empty(), "optimizer ", optimizer, " got an empty parameter list");
  std::set<const void*> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    TL_CHECK(params[i].defined(), "parameter ", i, " is undefined");
    TL_CHECK(at::isFloatingType(params[i].scalar_type()), "parameter ", i, " has dtype ",
             params[i].scalar_type());
    // The same tensor twice would be updated twice per step.
    TL_CHECK(seen.insert(params[i].unsafeGetTensorImpl()).second, "parameter ", i,
             " appears more than once");
  }
}

}  // namespace

std::unique_ptr<Optimizer> createOptimizer(const OptimizerOptions& options,
                                           std::vector<at::Tensor> params) {
  const OptimizerOptions o = validated(options);
  checkParams(o.name, params);
  if (o.name == "sgd" || o.name == "nesterov")
    return detail::createSgd(o, o.name == "nesterov", std::move(params));
  if (o.name == "adagrad") return detail::createAdagrad(o, std::move(params));
  if (o.name == "adadelta") return detail::createAdadelta(o, std::move(params));
  return detail::createAdam(o, o.name == "adamw", std::move(params));
}

}  // namespace tl::optim
