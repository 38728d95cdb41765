// Fuzz target: the configuration parsers. Any input either gives a valid
// configuration whose JSON form (written into every trace's metadata) is
// valid JSON, or is refused with npuprof::error; nothing else may escape,
// crash or hang.
//
// The first byte picks the parser: even, JSON text; odd, environment
// variables ("NAME=value" lines, NAME chosen from those npuprof reads).
#include <npuprof/config.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

const char* const env_names[] = {
    "NPUPROF_OUTPUT_DIR",
    "NPUPROF_BUFFER_SIZE_KB",
    "NPUPROF_CHUNK_SIZE_KB",
    "NPUPROF_DOMAIN_INCLUDE",
    "NPUPROF_DOMAIN_EXCLUDE",
    "NPUPROF_MSTX",
    "NPUPROF_FLIGHT_RECORDER",
    "NPUPROF_MIN_DURATION_US",
    "NPUPROF_HOST_SYS",
    "NPUPROF_HOST_SYS_INTERVAL_MS",
    "NPUPROF_BACKEND",
    "NPUPROF_WORKER_NAME",
    "NPUPROF_FLUSH_INTERVAL_MS",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "NPUPROF_CONFIG",
    "NPUPROF_DEVICE_EVENTS_PER_STREAM",
    "NPUPROF_DEVICE_WAIT_MS",
    "NPUPROF_MSTX_FORWARD",
};
constexpr std::size_t env_count = sizeof env_names / sizeof env_names[0];

// A configuration that parsed must be valid and written as valid JSON, as
// the metadata writes it (invalid UTF-8 replaced).
void check_parsed(const npuprof::config& cfg) {
  cfg.validate();
  const std::string text = cfg.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!nlohmann::json::accept(text)) std::abort();
}

void fuzz_json(std::string_view text) {
  try {
    check_parsed(npuprof::config::from_json(text, "<fuzz>"));
  } catch (const npuprof::error&) {
  }
}

void fuzz_env(std::string_view text) {
  std::vector<const char*> set;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    const char* name = env_names[static_cast<unsigned char>(line[0]) % env_count];
    std::string value(line.substr(1));
    value.erase(std::find(value.begin(), value.end(), '\0'), value.end());            // environment strings end at NUL
    if (std::string_view(name) == "NPUPROF_CONFIG") value = "/nonexistent/" + value;  // never read real files
    ::setenv(name, value.c_str(), 1);
    set.push_back(name);
  }
  try {
    check_parsed(npuprof::config::from_env());
  } catch (const npuprof::error&) {
  }
  for (const char* name : set) ::unsetenv(name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    fuzz_json(text);
  } else {
    fuzz_env(text);
  }
  return 0;
}
