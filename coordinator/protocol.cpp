#include "coordinator/protocol.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/check.h"

namespace tl::coordinator {

namespace {

using nlohmann::json;

const json& field(const json& object, const char* key) {
  auto it = object.find(key);
  TL_REQUIRE(it != object.end(), "missing field '", key, "'");
  return *it;
}

int64_t intField(const json& object, const char* key, int64_t min, int64_t max) {
  const json& value = field(object, key);
  TL_REQUIRE(value.is_number_integer(), "field '", key, "' must be an integer, got ", value.dump());
  // Unsigned values above INT64_MAX would wrap in get<int64_t>().
  TL_REQUIRE(!value.is_number_unsigned() || value.get<uint64_t>() <= uint64_t(max), "field '", key,
             "' must be at most ", max, ", got ", value.dump());
  int64_t v = value.get<int64_t>();
  TL_REQUIRE(v >= min && v <= max, "field '", key, "' must be between ", min, " and ", max,
             ", got ", v);
  return v;
}

double secondsField(const json& object, const char* key) {
  const json& value = field(object, key);
  TL_REQUIRE(value.is_number(), "field '", key, "' must be a number, got ", value.dump());
  double v = value.get<double>();
  TL_REQUIRE(std::isfinite(v) && v >= 0, "field '", key, "' must be finite and >= 0, got ", v);
  return v;
}

json parseObject(const std::string& line) {
  json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
  TL_REQUIRE(!message.is_discarded(), "not valid JSON");
  TL_REQUIRE(message.is_object(), "expected a JSON object, got ", message.type_name());
  const json& type = field(message, "type");
  TL_REQUIRE(type.is_string(), "field 'type' must be a string, got ", type.dump());
  return message;
}

constexpr int64_t kMaxWorkers = 4096;
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max() / 2;

}  // namespace

std::string encode(const JobMessage& message) {
  json out;
  if (auto* r = std::get_if<RegisterMessage>(&message)) {
    out = {{"type", "register"},
           {"protocol", kProtocolVersion},
           {"job", r->job},
           {"pid", r->pid},
           {"compute_threads", r->computeThreads},
           {"min_workers", r->minWorkers},
           {"max_workers", r->maxWorkers},
           {"workers", r->workers}};
    if (r->cacheBytes >= 0) {
      out["cache_bytes"] = r->cacheBytes;
      out["samples"] = r->samples;
    }
  } else if (auto* p = std::get_if<ReportMessage>(&message)) {
    out = {{"type", "report"},
           {"workers", p->loader.workers},
           {"busy_s", p->loader.busySeconds},
           {"images_produced", p->loader.images},
           {"compute_s", p->compute.computeSeconds},
           {"images_consumed", p->compute.images},
           {"wait_s", p->waitSeconds}};
    if (p->cache.budgetBytes >= 0) {
      out["cache_hits"] = p->cache.hits;
      out["cache_misses"] = p->cache.misses;
      out["hit_bytes"] = p->cache.hitBytes;
      out["storage_bytes"] = p->cache.storageBytes;
      out["storage_s"] = p->cache.storageSeconds;
      out["cache_bytes"] = p->cache.budgetBytes;
    }
  } else {
    out = {{"type", "leave"}};
  }
  return out.dump() + "\n";
}

std::string encode(const CoordinatorMessage& message) {
  json out;
  if (auto* a = std::get_if<AssignMessage>(&message)) {
    out = {{"type", "assign"}, {"workers", a->workers}};
    if (a->cacheBytes >= 0) out["cache_bytes"] = a->cacheBytes;
  } else {
    // Replace invalid UTF-8 rather than throw: the message may quote what a peer sent.
    out = {{"type", "error"}, {"message", std::get<ErrorMessage>(message).message}};
    return out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return out.dump() + "\n";
}

JobMessage decodeJobMessage(const std::string& line) {
  json message = parseObject(line);
  const std::string type = message["type"].get<std::string>();
  if (type == "register") {
    int64_t protocol = intField(message, "protocol", 0, kMaxCount);
    TL_REQUIRE(protocol == kProtocolVersion, "protocol version ", protocol,
               " is not supported (this coordinator speaks ", kProtocolVersion, ")");
    RegisterMessage r;
    const json& job = field(message, "job");
    TL_REQUIRE(job.is_string(), "field 'job' must be a string, got ", job.dump());
    r.job = job.get<std::string>();
    TL_REQUIRE(!r.job.empty() && r.job.size() <= 256, "field 'job' must be 1 to 256 characters");
    r.pid = intField(message, "pid", 0, std::numeric_limits<int32_t>::max());
    r.computeThreads = int(intField(message, "compute_threads", 0, kMaxWorkers));
    r.minWorkers = int(intField(message, "min_workers", 1, kMaxWorkers));
    r.maxWorkers = int(intField(message, "max_workers", r.minWorkers, kMaxWorkers));
    r.workers = int(intField(message, "workers", 0, kMaxWorkers));
    if (message.contains("cache_bytes")) {
      r.cacheBytes = intField(message, "cache_bytes", 0, kMaxCount);
      r.samples = intField(message, "samples", 1, kMaxCount);
    }
    return r;
  }
  if (type == "report") {
    ReportMessage p;
    p.loader.workers = int(intField(message, "workers", 0, kMaxWorkers));
    p.loader.busySeconds = secondsField(message, "busy_s");
    p.loader.images = intField(message, "images_produced", 0, kMaxCount);
    p.compute.computeSeconds = secondsField(message, "compute_s");
    p.compute.images = intField(message, "images_consumed", 0, kMaxCount);
    p.waitSeconds = secondsField(message, "wait_s");
    if (message.contains("cache_bytes")) {
      p.cache.budgetBytes = intField(message, "cache_bytes", 0, kMaxCount);
      p.cache.hits = intField(message, "cache_hits", 0, kMaxCount);
      p.cache.misses = intField(message, "cache_misses", 0, kMaxCount);
      p.cache.hitBytes = intField(message, "hit_bytes", 0, kMaxCount);
      p.cache.storageBytes = intField(message, "storage_bytes", 0, kMaxCount);
      p.cache.storageSeconds = secondsField(message, "storage_s");
    }
    return p;
  }
  if (type == "leave") return LeaveMessage{};
  inputError("unknown message type '", type, "' (expected register, report or leave)");
}

CoordinatorMessage decodeCoordinatorMessage(const std::string& line) {
  json message = parseObject(line);
  const std::string type = message["type"].get<std::string>();
  if (type == "assign") {
    AssignMessage a{int(intField(message, "workers", 0, kMaxWorkers))};
    if (message.contains("cache_bytes")) a.cacheBytes = intField(message, "cache_bytes", 0, kMaxCount);
    return a;
  }
  if (type == "error") {
    const json& text = field(message, "message");
    TL_REQUIRE(text.is_string(), "field 'message' must be a string");
    return ErrorMessage{text.get<std::string>()};
  }
  inputError("unknown message type '", type, "' (expected assign or error)");
}

void LineBuffer::append(const char* data, size_t size) {
  if (start_ > 0 && start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  }
  buffer_.append(data, size);
  size_t lastNewline = buffer_.rfind('\n');
  size_t partialStart =
      lastNewline == std::string::npos || lastNewline < start_ ? start_ : lastNewline + 1;
  TL_REQUIRE(buffer_.size() - partialStart <= kMaxLineBytes, "message longer than ", kMaxLineBytes,
             " bytes without a newline");
}

bool LineBuffer::nextLine(std::string& line) {
  size_t newline = buffer_.find('\n', start_);
  if (newline == std::string::npos) {
    if (start_ > 0) {  // keep the partial line at the front so the buffer does not grow
      buffer_.erase(0, start_);
      start_ = 0;
    }
    return false;
  }
  line.assign(buffer_, start_, newline - start_);
  start_ = newline + 1;
  TL_REQUIRE(line.size() <= kMaxLineBytes, "message longer than ", kMaxLineBytes, " bytes");
  return true;
}

}  // namespace tl::coordinator
