// Test helper for pytorch_parity.py: builds a model from a seed and writes what the Python side
// compares with its own reference definition.
//
//   tl_model_dump <out-dir> <arch> <in-channels> <image-size> <depth> <batchnorm 0|1> <dropout>
//
// writes, under <out-dir>:
//   names.txt  one "name shape..." line per stateDict() entry, in order
//   init.pt    the state dict right after construction under torch::manual_seed(0)
//   after.pt   the state dict after one training-mode forward on `input` (BN statistics move)
//   io.pt      {"input", "train_output", "eval_output"}: the input, the training-mode output
//              computed from init.pt's state, and the eval-mode output from after.pt's state
#include <torch/serialize.h>

#include <fstream>
#include <iostream>

#include "common/files.h"
#include "runtime/models/model.h"
#include "runtime/models/state_dict_io.h"

int main(int argc, char** argv) {
  if (argc != 8) {
    std::cerr << "usage: tl_model_dump <out-dir> <arch> <in-channels> <image-size> <depth> "
                 "<batchnorm 0|1> <dropout>\n";
    return 2;
  }
  try {
    const std::string dir = argv[1];
    tl::models::ModelConfig config;
    config.arch = argv[2];
    config.inChannels = std::stoi(argv[3]);
    config.imageSize = std::stoi(argv[4]);
    config.depth = std::stoi(argv[5]);
    config.batchNorm = std::stoi(argv[6]) != 0;
    config.dropout = std::stod(argv[7]);
    tl::ensureWritableDir(dir);
    torch::set_num_threads(1);

    torch::manual_seed(0);
    auto model = tl::models::createModel(config);
    {
      std::ofstream names(tl::joinPath(dir, "names.txt"));
      for (const auto& [name, tensor] : tl::models::stateDict(*model)) {
        names << name;
        for (auto size : tensor.sizes()) names << ' ' << size;
        names << '\n';
      }
    }
    tl::models::saveStateDict(*model, tl::joinPath(dir, "init.pt"));

    torch::manual_seed(1);
    auto input = torch::randn({4, config.inChannels, config.imageSize, config.imageSize});
    torch::Tensor trainOutput, evalOutput;
    {
      torch::NoGradGuard noGrad;
      model->train();
      trainOutput = model->forward(input);
      tl::models::saveStateDict(*model, tl::joinPath(dir, "after.pt"));
      model->eval();
      evalOutput = model->forward(input);
    }
    c10::Dict<std::string, at::Tensor> io;
    io.insert("input", input);
    io.insert("train_output", trainOutput);
    io.insert("eval_output", evalOutput);
    const auto bytes = torch::pickle_save(c10::IValue(io));
    tl::writeFileAtomic(tl::joinPath(dir, "io.pt"), std::string_view(bytes.data(), bytes.size()));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tl_model_dump: " << e.what() << "\n";
    return 1;
  }
}
