// The implementation of the control header, compiled in the one file that
// defines NPUPROF_IMPLEMENTATION before it includes <npuprof/session.hpp>:
// what every program that starts a session needs once, and no other file.
#pragma once

#ifndef NPUPROF_SESSION_HPP
#error "compile the implementation by defining NPUPROF_IMPLEMENTATION before including <npuprof/session.hpp>"
#endif

#include "../marker/abi.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "config_keys.hpp"
#include "export_formats.hpp"
#include "session_core.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

const int detail::define_NPUPROF_IMPLEMENTATION_in_one_source_file = 1;

bool detail::is_export_type(std::string_view name) noexcept {
  return export_format_index(name) < export_formats().size();
}
std::string detail::export_type_names() { return export_format_names(); }

config config::from_json(std::string_view text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's own text repeats the position; keep just its reason.
    const std::size_t colon = what.rfind(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw config_error(source + ":" + detail::text_position(text, e.byte == 0 ? 0 : e.byte - 1) +
                       ": invalid JSON: " + what);
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for a double
    std::string what = e.what();
    const std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    throw config_error(source + ": invalid JSON: " + what);
  }
  if (!doc.is_object()) {
    throw config_error(source + ": expected a JSON object at the top level, got " + detail::json_type_name(doc));
  }
  config cfg;
  cfg.source = source;
  std::map<std::string_view, nlohmann::json> given;  // by key, aliases under their key's name
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const detail::config_key* k = detail::find_config_key(it.key());
    if (k == nullptr) {
      detail::warn(cfg, detail::unknown_key_warning(source, it.key()));
      continue;
    }
    k->from_json(cfg, source, *k, it.value());
    const auto [at, first] = given.emplace(k->alias_of.empty() ? k->name : k->alias_of, it.value());
    if (!first && at->second != it.value()) {
      detail::key_error(source, it.key(), "conflicts with the value given for its alias");
    }
  }
  detail::check_filters(cfg);
  cfg.validate();
  return cfg;
}

config config::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path + ": cannot open config file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return from_json(text.str(), path);
}

void config::apply_env() {
  for (const detail::config_key& k : detail::config_keys()) {
    if (k.env == nullptr || k.from_env == nullptr) continue;
    if (const char* v = std::getenv(k.env)) k.from_env(*this, k, v);
  }
}

config config::from_env() {
  config cfg;
  if (const char* path = std::getenv("NPUPROF_CONFIG"); path != nullptr && *path != '\0') {
    cfg = from_file(path);
    cfg.source = std::string(path) + " + environment";
  } else {
    cfg.source = "environment";
  }
  const bool had_both = !cfg.domain_include.empty() && !cfg.domain_exclude.empty();
  cfg.apply_env();
  if (!had_both) detail::check_filters(cfg);
  cfg.validate();
  return cfg;
}

void config::validate() const {
  auto bad = [&](const char* key, const std::string& what) { detail::key_error(source, key, what); };
  for (const detail::config_key& k : detail::config_keys()) {
    if (k.check != nullptr) k.check(*this, k);
  }
  // What one key allows that depends on another.
  if (buffer_size_kb < chunk_size_kb) {
    bad("buffer_size_kb", "must be at least chunk_size_kb (" + std::to_string(chunk_size_kb) + "), got " +
                              std::to_string(buffer_size_kb));
  }
  if (buffer_size_kb / chunk_size_kb > 1'000'000) {
    bad("buffer_size_kb", "makes more than a million chunks; raise chunk_size_kb");
  }
  if (world_size >= 0 && rank >= world_size) {
    bad("rank", "must be below world_size (" + std::to_string(world_size) + "), got " + std::to_string(rank));
  }
}

nlohmann::json config::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const detail::config_key& k : detail::config_keys()) {
    if (k.alias_of.empty()) out[std::string(k.name)] = k.to_json(*this);
  }
  out["source"] = source;
  return out;
}

session::session(config cfg, int) : core_(std::make_unique<detail::session_core>(std::move(cfg))) {}
session::~session() = default;

void session::start() { core_->start(); }
std::filesystem::path session::stop() { return core_->stop(); }
void session::cancel() { core_->cancel(); }
void session::clear() { core_->clear(); }
void session::step() { core_->step(); }
std::filesystem::path session::dump(const std::string& reason) { return core_->dump(reason); }
std::filesystem::path session::write_to(const std::string& parent) { return core_->write_to(parent); }
bool session::running() const noexcept { return core_->running(); }
const config& session::configuration() const noexcept { return core_->configuration(); }
std::filesystem::path session::output_path() const { return core_->output_path(); }
const trace_data& session::data() const { return core_->data(); }
const std::string& session::trace_id() const noexcept { return core_->trace_id(); }
long session::current_step() const noexcept { return core_->current_step(); }
step_action session::current_action() const noexcept { return core_->current_action(); }
void session::add_metadata(const std::string& key, const nlohmann::json& value) { core_->add_metadata(key, value); }
std::string session::metrics_address() const { return core_->metrics_address(); }

void set_domain_filter(domain_filter f) {
  if (!f.include.empty() && !f.exclude.empty()) {
    detail::say(
        "warning: both a domain include and a domain exclude list are set; only the include list takes "
        "effect");
  }
  detail::state().domains.set_filter(std::move(f));
}

domain_filter current_domain_filter() { return detail::state().domains.filter(); }

void set_markers_enabled(bool on) {
  domain_filter f = current_domain_filter();
  f.markers = on;
  detail::state().domains.set_filter(std::move(f));
}

void set_domain_include(std::vector<std::string> names) {
  domain_filter f = current_domain_filter();
  f.include = std::move(names);
  set_domain_filter(std::move(f));
}

void set_domain_exclude(std::vector<std::string> names) {
  domain_filter f = current_domain_filter();
  f.exclude = std::move(names);
  set_domain_filter(std::move(f));
}

std::filesystem::path dump(const std::string& reason) { return detail::dump_active_session(reason); }

NPUPROF_ABI_END
}  // namespace npuprof
