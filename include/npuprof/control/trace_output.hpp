// Where a session's traces go: each into a new output directory, in every
// format the configuration asks for; the last one is kept for data() and
// write_to().
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../config.hpp"
#include "../engine/collected.hpp"
#include "../engine/decode.hpp"
#include "../export/file.hpp"
#include "../export/metadata.hpp"
#include "../export/output_dir.hpp"
#include "../trace_data.hpp"
#include "export_formats.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A session's written traces. Cycles, dumps and stop() may write at once.
class trace_output {
 public:
  /// Writes as `cfg` says; `cfg` outlives this object.
  explicit trace_output(const config& cfg) : cfg_(cfg) {}

  /// Writes `c` into a new output directory under `parent`; returns its path.
  /// What fails leaves no half-written directory.
  std::filesystem::path write(const collected& c, const std::string& parent) const {
    const trace_data& d = c.header;
    std::string worker = cfg_.worker_name.empty() ? d.hostname : cfg_.worker_name;
    if (cfg_.worker_name.empty() && cfg_.rank >= 0) worker += "_rank" + std::to_string(cfg_.rank);
    // Named for when it is written, not for when the data begins.
    output_directory dir = make_output_dir(parent, worker, d.pid, wall_ns());
    try {
      write_file(dir, profiler_info_name(d),
                 render_profiler_info(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      for (const export_format& format : export_formats()) {
        if (wanted(format.name)) writer_of(format.name)(c, dir, c.trace_id, c.user_metadata);
      }
    } catch (...) {
      dir.discard();
      throw;
    }
    return dir.path();
  }

  /// Writes `c` under the configured output_dir, as announce() says.
  std::filesystem::path deliver(const collected& c) { return announce(write(c, cfg_.output_dir)); }

  /// Notes `dir` as the last written and tells on_trace_ready.
  std::filesystem::path announce(const std::filesystem::path& dir) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      output_ = dir;
    }
    if (cfg_.on_trace_ready) cfg_.on_trace_ready(dir);
    return dir;
  }

  /// Keeps `c`, the last stop's or cycle's records, for data() and write_to().
  void keep(std::shared_ptr<collected> c) {
    std::lock_guard<std::mutex> lock(mutex_);
    collected_ = std::move(c);
    data_.reset();
  }

  /// The kept records, decoded when first asked for.
  const trace_data& data() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!data_) data_ = std::make_shared<trace_data>(decode_all(*collected_));
    return *data_;
  }

  /// Writes the kept records again, under `parent`.
  std::filesystem::path write_to(const std::string& parent) {
    std::shared_ptr<collected> c;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      c = collected_;
    }
    const std::filesystem::path dir = write(*c, parent);
    std::lock_guard<std::mutex> lock(mutex_);
    output_ = dir;
    return dir;
  }

  /// The directory written last.
  std::filesystem::path last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return output_;
  }

 private:
  bool wanted(std::string_view type) const {
    return std::find(cfg_.export_type.begin(), cfg_.export_type.end(), type) != cfg_.export_type.end();
  }

  const config& cfg_;
  mutable std::mutex mutex_;
  std::shared_ptr<collected> collected_ = std::make_shared<collected>();
  mutable std::shared_ptr<trace_data> data_;  // collected_, decoded when first asked for
  std::filesystem::path output_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
