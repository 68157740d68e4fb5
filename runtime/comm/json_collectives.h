// Small-object collectives: a JSON value gathered from every member, or broadcast from one, for
// the records a job exchanges besides its tensors (host names and pids, start-up failures,
// measurements, the rescale command). Not for payloads whose bytes decide a job's parameters:
// those travel as tensors (est/context_exchange.h).
//
// Values travel as CBOR (doubles, NaN included, come back bit for bit). Each call is one
// collective of `inlineBytes` per member while every value fits; a larger value costs one more
// collective for the rest. Every member must pass the same options. Called from the
// communicator's thread, by all members in the same order, like any collective.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/comm/communicator.h"

namespace tl::comm {

struct JsonCollectiveOptions {
  size_t inlineBytes = 256;  // per member in the first collective, its 8-byte length included
  CollectiveOptions collective;
};

// Every member's `mine`, by rank.
std::vector<nlohmann::json> allgatherJson(Communicator& comm, const nlohmann::json& mine,
                                          const JsonCollectiveOptions& options = {});

// The root's `value` on every member (the others' `value` is ignored).
nlohmann::json broadcastJson(Communicator& comm, const nlohmann::json& value, int root,
                             const JsonCollectiveOptions& options = {});

}  // namespace tl::comm
