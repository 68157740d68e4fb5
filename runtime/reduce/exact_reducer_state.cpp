#include "runtime/reduce/exact_reducer_state.h"

#include <ATen/ATen.h>

#include <cmath>
#include <map>

#include "common/check.h"
#include "runtime/reduce/fixed_point.h"

namespace tl::reduce {
namespace {

constexpr const char* kWhat = "exact reducer state";

at::Tensor take(std::map<std::string, at::Tensor>& entries, const std::string& name,
                at::ScalarType dtype, int64_t length) {
  auto it = entries.find(name);
  TL_REQUIRE(it != entries.end(), kWhat, ": entry '", name, "' is missing");
  at::Tensor t = it->second;
  entries.erase(it);
  TL_REQUIRE(t.defined() && t.scalar_type() == dtype && t.dim() == 1 && t.size(0) == length, kWhat,
             ": entry '", name, "' must be a ", at::toString(dtype), " tensor of shape [", length,
             "], got ", t.defined() ? at::toString(t.scalar_type()) : "undefined", " ",
             t.defined() ? t.sizes() : at::IntArrayRef{});
  return t.cpu().contiguous();
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> ExactReducerState::toNamedTensors() const {
  const auto count = int64_t(exponents.size());
  at::Tensor e = at::empty({count}, at::kLong);
  at::Tensor m = at::empty({count}, at::kDouble);
  for (int64_t t = 0; t < count; ++t) {
    e.data_ptr<int64_t>()[t] = exponents[t];
    m.data_ptr<double>()[t] = maxAbs[t];
  }
  return {{"exponents", e}, {"max_abs", m}, {"scales_known", at::full({1}, int64_t(scalesKnown), at::kLong)}};
}

ExactReducerState ExactReducerState::fromNamedTensors(
    const std::vector<std::pair<std::string, at::Tensor>>& named, size_t tensorCount) {
  std::map<std::string, at::Tensor> entries;
  for (const auto& [name, tensor] : named) {
    TL_REQUIRE(entries.emplace(name, tensor).second, kWhat, ": entry '", name, "' appears twice");
  }
  const auto count = int64_t(tensorCount);
  at::Tensor e = take(entries, "exponents", at::kLong, count);
  at::Tensor m = take(entries, "max_abs", at::kDouble, count);
  at::Tensor known = take(entries, "scales_known", at::kLong, 1);
  TL_REQUIRE(entries.empty(), kWhat, ": unexpected entry '", entries.begin()->first, "'");

  ExactReducerState s;
  const int64_t k = known.data_ptr<int64_t>()[0];
  TL_REQUIRE(k == 0 || k == 1, kWhat, ": 'scales_known' must be 0 or 1, got ", k);
  s.scalesKnown = k == 1;
  for (int64_t t = 0; t < count; ++t) {
    const int64_t exponent = e.data_ptr<int64_t>()[t];
    const double maxAbs = m.data_ptr<double>()[t];
    TL_REQUIRE(std::abs(exponent) <= fixed::kExponentLimit, kWhat, ": 'exponents'[", t, "] = ",
               exponent, " is outside [-", fixed::kExponentLimit, ", ", fixed::kExponentLimit, "]");
    TL_REQUIRE(std::isfinite(maxAbs) && maxAbs >= 0, kWhat, ": 'max_abs'[", t, "] = ", maxAbs,
               " is not a finite magnitude");
    s.exponents.push_back(int(exponent));
    s.maxAbs.push_back(maxAbs);
  }
  return s;
}

}  // namespace tl::reduce
