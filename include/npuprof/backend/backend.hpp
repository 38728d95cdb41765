// Choosing the backend at session start: `acl` when the Ascend runtime can
// be loaded (or the config asks for it), else `host`.
#pragma once

#include "../marker/abi.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "../marker/diagnostics.hpp"
#include "../config.hpp"
#include "acl_backend.hpp"
#include "acl_runtime.hpp"
#include "device_backend.hpp"
#include "mstx_forward.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// The backend a session runs with: a device backend, or none (host only),
/// and what the metadata says about the choice.
struct backend_choice {
  device_backend* device = nullptr;
  mstx_forwarder* forwarder = nullptr;
  nlohmann::json note = {{"name", "host"}};
};

/// Whether the user pointed npuprof at a runtime (then a failure to load it
/// is worth a message even in "auto" mode).
inline bool runtime_named(const config& cfg) {
  auto set = [](const char* v) { return v != nullptr && *v != '\0'; };
  return !cfg.acl_library.empty() || set(std::getenv("NPUPROF_ACL_LIBRARY")) || set(std::getenv("ASCEND_HOME_PATH"));
}

inline backend_choice choose_backend(const config& cfg) {
  backend_choice c;
  if (cfg.backend == "host") return c;
  std::string why;
  acl_backend* b = acl_backend::open(cfg.acl_library, why);
  if (b == nullptr) {
    c.note["requested"] = cfg.backend;
    c.note["fallback_reason"] = why;
    if (cfg.backend == "acl" || runtime_named(cfg)) {
      say("device backend unavailable: %s; recording host-only", why.c_str());
    }
    return c;
  }
  if (b->simulated()) {
    say("device backend acl on a SIMULATED Ascend runtime (%s), device %d", b->library().c_str(), b->device());
  }
  c.device = b;
  if (cfg.mstx_forward) {
    bool loop = false;
    c.forwarder = mstx_forwarder::open(cfg.mstx_library, why, &loop);
    if (loop) say("markers not forwarded: %s", why.c_str());
    c.note["mstx_forward"] = c.forwarder != nullptr ? nlohmann::json{{"library", c.forwarder->library()}}
                                                    : nlohmann::json{{"library", nullptr}, {"reason", why}};
  }
  return c;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
