#include "est/byte_record.h"
#include "est/est_context.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <mutex>

#include "common/check.h"

namespace tl::est {
namespace {

at::Generator defaultGenerator(c10::Device device) {
  return at::globalContext().defaultGenerator(device);
}

at::Tensor getState(c10::Device device) {
  at::Generator gen = defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void setState(c10::Device device, const at::Tensor& state) {
  at::Generator gen = defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

uint64_t mixSeed(uint64_t seed, int rank) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + uint64_t(rank) + 0x632BE59BD9B4E019ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

EstContext initialContext(int logicalRank, uint64_t seed, c10::Device device) {
  EstContext c;
  c.logicalRank = logicalRank;
  const uint64_t s = mixSeed(seed, logicalRank);
  at::Generator cpu = at::make_generator<at::CPUGeneratorImpl>(s);
  c.cpuRngState = cpu.get_state();
  if (device.is_cuda()) {
    // Seed the device generator the same way, then take its state back out.
    at::Tensor saved = getState(device);
    {
      at::Generator gen = defaultGenerator(device);
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_current_seed(s);
    }
    c.deviceRngState = getState(device);
    setState(device, saved);
  }
  return c;
}

GeneratorStates GeneratorStates::capture(c10::Device device) {
  GeneratorStates s;
  s.cpu = getState(c10::Device(c10::kCPU));
  if (device.is_cuda()) s.device = getState(device);
  return s;
}

void GeneratorStates::install(c10::Device device) const {
  setState(c10::Device(c10::kCPU), cpu);
  if (device.is_cuda()) setState(device, this->device);
}

GeneratorSwitcher::GeneratorSwitcher(std::vector<EstContext*> contextsByRank, c10::Device device)
    : contexts_(std::move(contextsByRank)), device_(device) {}

void GeneratorSwitcher::switchOut(int est) {
  EstContext* c = contexts_.at(est);
  TL_CHECK(c != nullptr, "EST ", est, " is not local");
  c->cpuRngState = getState(c10::Device(c10::kCPU));
  if (device_.is_cuda()) c->deviceRngState = getState(device_);
}

void GeneratorSwitcher::switchIn(int est) {
  EstContext* c = contexts_.at(est);
  TL_CHECK(c != nullptr, "EST ", est, " is not local");
  setState(c10::Device(c10::kCPU), c->cpuRngState);
  if (device_.is_cuda()) setState(device_, c->deviceRngState);
}

namespace {

void appendBytes(std::vector<uint8_t>& out, const at::Tensor& t) {
  if (!t.defined()) {
    appendInt(out, 0);
    return;
  }
  at::Tensor c = t.contiguous();
  TL_CHECK(c.scalar_type() == at::kByte, "generator state must be uint8");
  appendInt(out, c.numel());
  const uint8_t* p = c.data_ptr<uint8_t>();
  out.insert(out.end(), p, p + c.numel());
}

at::Tensor readBytes(const uint8_t*& p, const uint8_t* end) {
  int64_t n = readInt(p, end, "EST context");
  if (n == 0) return at::Tensor();
  TL_CHECK(n > 0 && end - p >= n, "EST context record truncated");
  at::Tensor t = at::empty({n}, at::kByte);
  std::memcpy(t.data_ptr<uint8_t>(), p, size_t(n));
  p += n;
  return t;
}

}  // namespace

std::vector<uint8_t> packContext(const EstContext& c) {
  std::vector<uint8_t> out;
  appendInt(out, c.logicalRank);
  appendInt(out, c.cursor.epoch);
  appendInt(out, c.cursor.position);
  appendBytes(out, c.cpuRngState);
  appendBytes(out, c.deviceRngState);
  return out;
}

EstContext unpackContext(const uint8_t* bytes, size_t size) {
  const uint8_t* p = bytes;
  const uint8_t* end = bytes + size;
  EstContext c;
  c.logicalRank = int(readInt(p, end, "EST context"));
  c.cursor.epoch = readInt(p, end, "EST context");
  c.cursor.position = readInt(p, end, "EST context");
  c.cpuRngState = readBytes(p, end);
  c.deviceRngState = readBytes(p, end);
  return c;
}

}  // namespace tl::est
