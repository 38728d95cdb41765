// Fuzz target: a message's way from a marker to the trace. Each input is
// recorded as a copied mark and range message in a session of its own; the
// written trace_view.json must parse, and give back the input as documented:
// cut to 255 bytes at a character boundary, each byte that is not part of
// valid UTF-8 replaced by U+FFFD. Nothing may crash.
#include <npuprof/session.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace {

struct fuzz {
  static constexpr const char* name = "fuzz";
};

// Length of the valid UTF-8 character at s[i], or 0. Written from the
// definition (decode, then check range, shortest form and surrogates), as an
// oracle independent of the exporter's own check.
std::size_t valid_char(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  if (b(i) < 0x80) return 1;
  const std::size_t len = (b(i) & 0xE0) == 0xC0 ? 2 : (b(i) & 0xF0) == 0xE0 ? 3 : (b(i) & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  std::uint32_t cp = b(i) & (0x7Fu >> len);  // the lead byte's payload bits
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  const std::uint32_t shortest_from[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < shortest_from[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::string expected_name(std::string_view in) {
  std::size_t n = in.size();
  if (n > npuprof::detail::max_message) {
    n = npuprof::detail::max_message;
    while (n > 0 && (static_cast<unsigned char>(in[n]) & 0xC0) == 0x80) --n;
  }
  const std::string_view kept = in.substr(0, n);
  std::string out;
  for (std::size_t i = 0; i < kept.size();) {
    const std::size_t len = valid_char(kept, i);
    out += len == 0 ? std::string("\xEF\xBF\xBD") : std::string(kept.substr(i, len));
    i += len == 0 ? 1 : len;
  }
  return out;
}

const std::filesystem::path& out_root() {
  static const std::filesystem::path root = [] {
    char templ[] = "/tmp/npuprof-fuzz-XXXXXX";
    if (::mkdtemp(templ) == nullptr) std::abort();
    return std::filesystem::path(templ);
  }();
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  npuprof::config cfg;
  cfg.output_dir = out_root().string();
  cfg.backend = "host";
  npuprof::session s{cfg};
  s.start();
  npuprof::mark<fuzz>(in);
  { npuprof::scoped_range<fuzz> r{std::string(in)}; }
  const std::filesystem::path dir = s.stop();

  std::ifstream file(dir / "trace_view.json");
  const nlohmann::json trace = nlohmann::json::parse(file);  // throws (and so fails) if invalid
  const std::string want = expected_name(in);
  int marks = 0, ranges = 0;
  for (const nlohmann::json& e : trace) {
    if (e.value("cat", "") != "fuzz") continue;
    if (e["name"].get<std::string>() != want) std::abort();
    marks += e["ph"] == "i";
    ranges += e["ph"] == "X";
  }
  if (marks != 1 || ranges != 1) std::abort();
  std::filesystem::remove_all(dir);
  return 0;
}
