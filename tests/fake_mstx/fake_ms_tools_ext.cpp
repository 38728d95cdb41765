// A stand-in for the toolkit's libms_tools_ext.so that records every call it
// receives, one line each, for the forwarding tests.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

struct domain {
  std::string name;
};

std::mutex mutex;
std::string* log_text = new std::string();
std::atomic<std::uint64_t> next_id{1000};

void add(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex);
  *log_text += line;
  *log_text += '\n';
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return p != nullptr ? buf : "0";
}

}  // namespace

FAKE_API void mstxMarkA(const char* message, void* stream) { add("mark|" + std::string(message) + "|" + hex(stream)); }

FAKE_API std::uint64_t mstxRangeStartA(const char* message, void* stream) {
  const std::uint64_t id = next_id++;
  add("range_start|" + std::string(message) + "|" + hex(stream) + "|" + std::to_string(id));
  return id;
}

FAKE_API void mstxRangeEnd(std::uint64_t id) { add("range_end|" + std::to_string(id)); }

FAKE_API void mstxGetToolId(std::uint64_t* id) { *id = 0x66616b65; }

FAKE_API void* mstxDomainCreateA(const char* name) {
  add("domain_create|" + std::string(name));
  return new domain{name};
}

FAKE_API void mstxDomainDestroy(void*) {}

FAKE_API void mstxDomainMarkA(void* d, const char* message, void* stream) {
  add("domain_mark|" + static_cast<domain*>(d)->name + "|" + message + "|" + hex(stream));
}

FAKE_API std::uint64_t mstxDomainRangeStartA(void* d, const char* message, void* stream) {
  const std::uint64_t id = next_id++;
  add("domain_range_start|" + static_cast<domain*>(d)->name + "|" + message + "|" + hex(stream) + "|" +
      std::to_string(id));
  return id;
}

FAKE_API void mstxDomainRangeEnd(void* d, std::uint64_t id) {
  add("domain_range_end|" + static_cast<domain*>(d)->name + "|" + std::to_string(id));
}

/// Everything received so far, and forgets it.
FAKE_API const char* fake_mstx_take_log() {
  static std::string taken;
  std::lock_guard<std::mutex> lock(mutex);
  taken.swap(*log_text);
  log_text->clear();
  return taken.c_str();
}
