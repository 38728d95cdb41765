// Fuzz target: the mstx entry points of libnpuprof_mstx.so, called through
// the ABI as a program would, in any order: marks, ranges and domains with
// arbitrary messages and names, null pointers, range ids that were never
// given out or were ended already. Nothing may crash; the session the
// library started writes its trace at exit.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mstx_loader.hpp"

namespace {

// Reads the input as a little program: one opcode byte, then its operands.
class reader {
 public:
  reader(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool more() const { return at_ < n_; }
  std::uint8_t byte() { return at_ < n_ ? d_[at_++] : 0; }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return v;
  }
  // A message: null (length byte 255) or up to 254 bytes, NUL-terminated.
  const char* text() {
    const std::uint8_t len = byte();
    if (len == 255) return nullptr;
    held_.emplace_back();
    for (std::uint8_t i = 0; i < len && more(); ++i) held_.back().push_back(static_cast<char>(byte()));
    return held_.back().c_str();
  }

 private:
  const std::uint8_t* d_;
  std::size_t n_;
  std::size_t at_ = 0;
  std::vector<std::string> held_;
};

mstx_loader& mstx() {
  static mstx_loader* loader = [] {
    ::setenv("NPUPROF_BACKEND", "host", 1);
    if (std::getenv("NPUPROF_OUTPUT_DIR") == nullptr) ::setenv("NPUPROF_OUTPUT_DIR", "/tmp/npuprof-fuzz-mstx", 1);
    if (std::getenv("MSTX_INJECTION_PATH") == nullptr) ::setenv("MSTX_INJECTION_PATH", NPUPROF_FUZZ_MSTX_LIBRARY, 1);
    auto* l = new mstx_loader();
    if (l->load() != MSTX_SUCCESS) std::abort();
    return l;
  }();
  return *loader;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mstx_loader& m = mstx();
  reader in(data, size);
  std::vector<mstxRangeId> open;
  std::vector<mstxDomainHandle_t> domains{nullptr};
  // A handle create returned, or now and then any address at all: a foreign one is ignored.
  auto pick_domain = [&] {
    if (in.byte() % 8 == 0) return reinterpret_cast<mstxDomainHandle_t>(static_cast<std::uintptr_t>(in.u64()));
    return domains[in.byte() % domains.size()];
  };
  auto stream = [&] { return reinterpret_cast<aclrtStream>(static_cast<std::uintptr_t>(in.byte() % 4) * 0x1000); };
  while (in.more()) {
    switch (in.byte() % 9) {
      case 0:
        m.mark(in.text(), stream());
        break;
      case 1:
        open.push_back(m.range_start(in.text(), stream()));
        break;
      case 2:  // end a range that is open, or an id it never gave out
        if (!open.empty() && in.byte() % 2 == 0) {
          m.range_end(open.back());
          open.pop_back();
        } else {
          m.range_end(in.u64());
        }
        break;
      case 3:
        domains.push_back(m.domain_create(in.text()));
        break;
      case 4:
        m.domain_mark(pick_domain(), in.text(), stream());
        break;
      case 5: {
        mstxDomainHandle_t d = pick_domain();
        const mstxRangeId id = m.domain_range_start(d, in.text(), stream());
        m.domain_range_end(d, in.byte() % 2 == 0 ? id : in.u64());
        break;
      }
      case 6:
        m.domain_destroy(pick_domain());
        break;
      case 7:
        (void)m.tool_id();
        break;
      default:
        m.range_end(0);
        break;
    }
  }
  for (mstxRangeId id : open) m.range_end(id);
  return 0;
}
