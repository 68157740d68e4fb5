#include "est/replica.h"

namespace tl::est {

void Replica::useReducer(Reduction mode, comm::Communicator& device, int64_t bucketBytes) {
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) names.push_back(item.key());
  auto next = reduce::createReducer(mode, device, model->parameters(), std::move(names), bucketBytes);
  if (reducer) next->loadState(reducer->state());
  reducer = std::move(next);
  deviceComm = &device;
}

}  // namespace tl::est
