// Forwarding markers to the Ascend toolkit's own mstx library
// (libms_tools_ext.so), so that msprof and MindStudio keep seeing them while
// npuprof records.
#pragma once

#include "../marker/abi.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../marker/forward_hook.hpp"
#include "../marker/message.hpp"
#include "../marker/platform.hpp"
#include "../marker/record.hpp"
#include "../engine/state.hpp"
#include "shared_library.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// npuprof's own mstx tool id ("npuprof"): a library that reports it would
/// send the markers back to npuprof.
inline constexpr std::uint64_t npuprof_mstx_tool_id = 0x00666f727075706eULL;

/// What keeps forwarding from looping back into npuprof, process-wide: the
/// libraries that handed their mstx tables to npuprof's injection library,
/// and whether this thread is loading a forward target (an InitInjectionMstx
/// that arrives meanwhile comes from that target).
struct mstx_loop_guard {
  std::mutex mutex;
  std::vector<const void*> injectors;  // load addresses

  /// Notes that the library holding `fn` gave its tables to npuprof.
  void add_injector(const void* fn) {
    Dl_info info{};
    if (::dladdr(fn, &info) == 0 || info.dli_fbase == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex);
    if (std::find(injectors.begin(), injectors.end(), info.dli_fbase) == injectors.end()) {
      injectors.push_back(info.dli_fbase);
    }
  }

  /// Whether the library holding `fn` gave its tables to npuprof.
  bool is_injector(const void* fn) {
    Dl_info info{};
    if (::dladdr(fn, &info) == 0 || info.dli_fbase == nullptr) return false;
    std::lock_guard<std::mutex> lock(mutex);
    return std::find(injectors.begin(), injectors.end(), info.dli_fbase) != injectors.end();
  }
};

NPUPROF_PROCESS_WIDE inline mstx_loop_guard& mstx_loops() {
  static auto* g = new mstx_loop_guard();
  return *g;
}

/// Set while this thread makes the first call into a forward target.
NPUPROF_PROCESS_WIDE inline bool& mstx_opening_forward_target() noexcept {
  static thread_local bool on = false;
  return on;
}

/// Set when an InitInjectionMstx arrived on this thread meanwhile.
NPUPROF_PROCESS_WIDE inline bool& mstx_injection_reentered() noexcept {
  static thread_local bool seen = false;
  return seen;
}

class mstx_forwarder final : public marker_forwarder {
 public:
  /// The forwarder for the mstx library at `path` (empty: NPUPROF_MSTX_LIBRARY,
  /// else $ASCEND_HOME_PATH/lib64/libms_tools_ext.so, else the loader's
  /// search), loaded once per process; null with `why` when there is none.
  /// `loop` is set when the library is refused because its markers would
  /// come back to npuprof (a refusal kept for the life of the process).
  static mstx_forwarder* open(const std::string& path, std::string& why, bool* loop = nullptr);

  void mark(std::uint32_t domain, const message& m, stream_t stream) noexcept override {
    char buf[max_message + 1];
    const char* text = text_of(m, buf);
    if (domain == 0) {
      fn_.mark(text, stream);
    } else if (void* h = domain_handle_of(domain)) {
      fn_.domain_mark(h, text, stream);
    }
  }

  std::uint64_t range_start(std::uint32_t domain, const message& m, stream_t stream) noexcept override {
    char buf[max_message + 1];
    const char* text = text_of(m, buf);
    if (domain == 0) return fn_.range_start(text, stream);
    void* h = domain_handle_of(domain);
    return h != nullptr ? fn_.domain_range_start(h, text, stream) : 0;
  }

  void range_end(std::uint32_t domain, std::uint64_t forwarded_id) noexcept override {
    if (domain == 0) {
      fn_.range_end(forwarded_id);
    } else if (void* h = domain_handle_of(domain)) {
      fn_.domain_range_end(h, forwarded_id);
    }
  }

  void remember(std::uint64_t id, std::uint32_t domain, std::uint64_t forwarded_id) noexcept override {
    open_range& r = open_[slot(id)];
    if (r.id.load(std::memory_order_acquire) != 0) lost_.fetch_add(1, std::memory_order_relaxed);
    r.forwarded.store(forwarded_id, std::memory_order_relaxed);
    r.domain.store(domain, std::memory_order_relaxed);
    r.id.store(id, std::memory_order_release);
  }

  void end_remembered(std::uint64_t id) noexcept override {
    open_range& r = open_[slot(id)];
    std::uint64_t expected = id;
    const std::uint64_t fid = r.forwarded.load(std::memory_order_relaxed);
    const std::uint32_t domain = r.domain.load(std::memory_order_relaxed);
    if (r.id.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) range_end(domain, fid);
  }

  const std::string& library() const noexcept { return path_; }
  /// Ranges begun by id whose forwarded end was lost (too many open at once).
  std::uint64_t lost() const noexcept { return lost_.load(); }

 private:
  struct functions {
    void (*mark)(const char*, void*) = nullptr;
    std::uint64_t (*range_start)(const char*, void*) = nullptr;
    void (*range_end)(std::uint64_t) = nullptr;
    void (*get_tool_id)(std::uint64_t*) = nullptr;
    void* (*domain_create)(const char*) = nullptr;
    void (*domain_mark)(void*, const char*, void*) = nullptr;
    std::uint64_t (*domain_range_start)(void*, const char*, void*) = nullptr;
    void (*domain_range_end)(void*, std::uint64_t) = nullptr;
  };

  struct open_range {
    std::atomic<std::uint64_t> id{0};
    std::atomic<std::uint64_t> forwarded{0};
    std::atomic<std::uint32_t> domain{0};
  };
  static constexpr std::size_t open_slots = 4096;

  static std::size_t slot(std::uint64_t id) noexcept {
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ULL) >> 52) % open_slots;
  }

  // mstx takes NUL-terminated text.
  static const char* text_of(const message& m, char* buf) noexcept {
    if (m.is_registered()) return registered_text(m.id());
    const std::size_t n = m.copy_length();
    std::memcpy(buf, m.text(), n);
    buf[n] = '\0';
    return buf;
  }

  // Registered strings never change: each is looked up once.
  static const char* registered_text(std::uint64_t id) noexcept {
    static std::array<std::atomic<const char*>, 65536> cache{};
    if (id < cache.size()) {
      if (const char* t = cache[id].load(std::memory_order_acquire)) return t;
    }
    const char* t = "";
    try {
      t = state().strings.lookup(id).data();
    } catch (...) {
    }
    if (id < cache.size()) cache[id].store(t, std::memory_order_release);
    return t;
  }

  // The other tool's handle for npuprof domain `index`, created on first use.
  void* domain_handle_of(std::uint32_t index) noexcept {
    if (index >= domains_.size()) return nullptr;
    if (void* h = domains_[index].load(std::memory_order_acquire)) return h;
    std::string name;
    try {
      name = state().domains.name_of(index);
    } catch (...) {
      return nullptr;
    }
    void* h = fn_.domain_create(name.c_str());
    void* expected = nullptr;
    if (h != nullptr && !domains_[index].compare_exchange_strong(expected, h)) h = expected;
    return h;
  }

  bool load(const std::string& path, std::string& why, bool& loop) {
    shared_library lib(path, "the mstx library");
    if (!lib.open(why)) return false;
    lib.need(fn_.mark, "mstxMarkA");
    lib.need(fn_.range_start, "mstxRangeStartA");
    lib.need(fn_.range_end, "mstxRangeEnd");
    lib.need(fn_.get_tool_id, "mstxGetToolId");
    lib.need(fn_.domain_create, "mstxDomainCreateA");
    lib.need(fn_.domain_mark, "mstxDomainMarkA");
    lib.need(fn_.domain_range_start, "mstxDomainRangeStartA");
    lib.need(fn_.domain_range_end, "mstxDomainRangeEnd");
    if (!lib.complete(why)) return false;
    // The library that loaded npuprof (through MSTX_INJECTION_PATH) would
    // hand every forwarded marker back: refused before any call into it,
    // which may still be running its own start-up.
    mstx_loop_guard& guard = mstx_loops();
    if (guard.is_injector(reinterpret_cast<const void*>(fn_.mark))) {
      loop = true;
      why = "'" + path + "' is the library that loaded npuprof's mstx injection library: forwarding would loop";
      return false;
    }
    // A toolkit library loads its tool on its first call: when that tool is
    // npuprof, its InitInjectionMstx arrives here, nested, and declines.
    std::uint64_t tool = 0;
    mstx_opening_forward_target() = true;
    mstx_injection_reentered() = false;
    fn_.get_tool_id(&tool);
    mstx_opening_forward_target() = false;
    if (mstx_injection_reentered() || tool == npuprof_mstx_tool_id) {
      mstx_injection_reentered() = false;
      loop = true;
      why = "'" + path + "' loads npuprof's mstx injection library itself (MSTX_INJECTION_PATH): forwarding would loop";
      return false;
    }
    path_ = path;
    return true;
  }

  static std::string default_path() { return toolkit_library_path("NPUPROF_MSTX_LIBRARY", "libms_tools_ext.so"); }

  functions fn_;
  std::string path_;
  std::array<std::atomic<void*>, max_domains> domains_{};
  std::array<open_range, open_slots> open_{};
  std::atomic<std::uint64_t> lost_{0};
};

NPUPROF_PROCESS_WIDE inline mstx_forwarder* mstx_forwarder::open(const std::string& path, std::string& why,
                                                                 bool* loop) {
  static std::mutex mutex;
  static auto* loaded = new std::map<std::string, mstx_forwarder*>();
  static auto* looping = new std::map<std::string, std::string>();  // refused: why
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = path.empty() ? default_path() : path;
  if (auto it = loaded->find(key); it != loaded->end()) return it->second;
  if (auto it = looping->find(key); it != looping->end()) {
    why = it->second;
    if (loop != nullptr) *loop = true;
    return nullptr;
  }
  auto f = std::make_unique<mstx_forwarder>();
  bool loops = false;
  if (!f->load(key, why, loops)) {
    if (loops) (*looping)[key] = why;
    if (loop != nullptr) *loop = loops;
    return nullptr;
  }
  return (*loaded)[key] = f.release();
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
