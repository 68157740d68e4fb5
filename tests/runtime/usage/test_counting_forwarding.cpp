// Guard: the counting communicator forwards EVERY virtual of comm::Communicator and of
// comm::PendingCollective to the communicator it wraps. A virtual with a default body (as
// startAllreduce has) that the wrapper does not override compiles and still runs — through the
// default, silently (a blocking allreduce in place of a started one breaks overlap). So the
// list of virtuals is read from runtime/comm/communicator.h itself, and each one must reach a
// probe backend when called through the wrapper: a virtual added to the interface fails this
// test until the wrapper forwards it (and this test calls it).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "runtime/usage/counting_communicator.h"

namespace {

using namespace tl;

// The names of the virtual member functions (destructor aside) declared in `className`'s body.
std::set<std::string> virtualsOf(const std::string& header, const std::string& className) {
  std::ifstream in(header);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const auto start = all.find("class " + className + " {");
  EXPECT_NE(start, std::string::npos) << className << " not found in " << header;
  if (start == std::string::npos) return {};
  const std::string body = all.substr(start, all.find("\n};", start) - start);
  std::set<std::string> names;
  const std::regex declaration(R"(virtual\s+[^;{(]*?\b(\w+)\s*\()");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), declaration); it != std::sregex_iterator(); ++it)
    if ((*it)[1] != className) names.insert((*it)[1]);  // not the destructor
  return names;
}

struct Done final : comm::PendingCollective {
  bool test() override { return true; }
  void wait() override {}
};

// Records the name of every virtual called on it (and on the collectives it starts).
class Probe final : public comm::Communicator {
 public:
  mutable std::set<std::string> called;
  int rank() const override { return note("rank"), 0; }
  int size() const override { return note("size"), 2; }
  std::string backend() const override { return note("backend"), "probe"; }
  void allreduce(at::Tensor&, comm::ReduceOp, const comm::CollectiveOptions&) override { note("allreduce"); }
  std::unique_ptr<comm::PendingCollective> startAllreduce(at::Tensor&, comm::ReduceOp,
                                                          const comm::CollectiveOptions&) override {
    note("startAllreduce");
    struct Pending final : comm::PendingCollective {
      explicit Pending(const Probe& p) : probe(p) {}
      const Probe& probe;
      bool test() override { return probe.note("test"), false; }
      void wait() override { probe.note("wait"); }
    };
    return std::make_unique<Pending>(*this);
  }
  std::unique_ptr<comm::PendingCollective> startReduceScatter(at::Tensor&,
                                                              const comm::CollectiveOptions&) override {
    note("startReduceScatter");
    return std::make_unique<Done>();
  }
  std::unique_ptr<comm::PendingCollective> startAllgatherSegments(
      at::Tensor&, const comm::CollectiveOptions&) override {
    note("startAllgatherSegments");
    return std::make_unique<Done>();
  }
  void broadcast(at::Tensor&, int, const comm::CollectiveOptions&) override { note("broadcast"); }
  at::Tensor allgather(const at::Tensor& t, const comm::CollectiveOptions&) override {
    note("allgather");
    return t;
  }
  void barrier(const comm::CollectiveOptions&) override { note("barrier"); }
  bool pointToPoint() const override { return note("pointToPoint"), true; }
  std::unique_ptr<comm::PendingCollective> startSend(const at::Tensor&, int, int,
                                                     const comm::CollectiveOptions&) override {
    note("startSend");
    return std::make_unique<Done>();
  }
  std::unique_ptr<comm::PendingCollective> startReceive(at::Tensor&, int, int,
                                                        const comm::CollectiveOptions&) override {
    note("startReceive");
    return std::make_unique<Done>();
  }
  std::unique_ptr<comm::Communicator> split(int, int, const comm::CollectiveOptions&) override {
    note("split");
    return nullptr;
  }

 private:
  void note(const char* name) const { called.insert(name); }
};

TEST(CountingCommunicator, ForwardsEveryVirtualOfTheInterface) {
  const std::string header = std::string(TL_SOURCE_DIR) + "/runtime/comm/communicator.h";
  const auto communicator = virtualsOf(header, "Communicator");
  const auto pending = virtualsOf(header, "PendingCollective");
  // The parse itself: it finds the interface as it is today.
  for (const char* name : {"allreduce", "startAllreduce", "startReduceScatter",
                           "startAllgatherSegments", "broadcast", "allgather", "barrier", "split"})
    EXPECT_TRUE(communicator.count(name)) << name;
  EXPECT_EQ(pending, (std::set<std::string>{"test", "wait"}));

  Probe probe;
  usage::TrafficLog log;
  auto wrapper = usage::countTraffic(probe, log);
  at::Tensor t = at::ones({4}, at::kFloat);
  (void)wrapper->rank();
  (void)wrapper->size();
  (void)wrapper->backend();
  wrapper->allreduce(t, comm::ReduceOp::Sum);
  auto started = wrapper->startAllreduce(t, comm::ReduceOp::Sum);
  EXPECT_FALSE(started->test());
  started->wait();
  wrapper->reduceScatter(t);
  wrapper->allgatherSegments(t);
  wrapper->broadcast(t, 0);
  (void)wrapper->allgather(t);
  wrapper->barrier();
  EXPECT_EQ(wrapper->split(0, 0), nullptr);
  EXPECT_TRUE(wrapper->pointToPoint());
  // Point-to-point bytes are logged once complete: 16 sent, then 16 received by this member.
  const int64_t sent = log.sentTotal(), received = log.receivedTotal();
  wrapper->startSend(t, 1, 0)->wait();
  EXPECT_EQ(log.sentTotal() - sent, 16);
  EXPECT_EQ(log.receivedTotal() - received, 0);
  wrapper->startReceive(t, 1, 0)->wait();
  EXPECT_EQ(log.sentTotal() - sent, 16);
  EXPECT_EQ(log.receivedTotal() - received, 16);
  for (const std::string& name : communicator) EXPECT_TRUE(probe.called.count(name)) << "Communicator::" << name << " not forwarded";
  for (const std::string& name : pending) EXPECT_TRUE(probe.called.count(name)) << "PendingCollective::" << name << " not forwarded";
}

}  // namespace
