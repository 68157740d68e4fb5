// --weight-decay-on and --no-decay: which parameters weight decay applies to, as the two
// parameter groups a PyTorch user builds (nanoGPT's configure_optimizers: decay the tensors with
// 2 or more dimensions, not biases and norm gains), from shapes and names alone, so it works on
// any model, TorchScript modules included.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tl::optim {

struct NamedShape {
  std::string name;  // as named_parameters() gives it: "blocks.0.attn.weight"
  int64_t dims = 0;
};

// One entry per parameter, in order: true where weight decay applies.
//   on "all":       every parameter
//   on "matrices":  parameters with dims >= 2
// and, with a non-empty noDecay, not those whose name the ECMAScript regular expression
// noDecay matches somewhere in (std::regex_search; Python's re.search for the usual patterns).
std::vector<bool> decayMask(const std::vector<NamedShape>& params, const std::string& on,
                            const std::string& noDecay);

// InputError naming --no-decay when the pattern is not a regular expression.
void checkNoDecayPattern(const std::string& noDecay);

}  // namespace tl::optim
