// For the metrics tests: a plain HTTP/1.0 GET over a loopback socket, and a
// reader of Prometheus' text exposition format.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace test {

struct http_response {
  int status = 0;  // 0: no answer
  std::string body;
};

/// GET http://<address><path>, where address is "127.0.0.1:port"; gives up
/// after `timeout`.
inline http_response http_get(const std::string& address, const std::string& path,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  http_response r;
  const std::size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(std::atoi(address.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1) return r;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return r;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return r;
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + address + "\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return r;
  }
  std::string raw;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 && raw.compare(0, 9, "HTTP/1.0 ") != 0) return r;
  r.status = std::atoi(raw.c_str() + 9);
  if (head_end != std::string::npos) r.body = raw.substr(head_end + 4);
  return r;
}

/// Whether something accepts connections at "127.0.0.1:port".
inline bool listening(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(std::atoi(address.c_str() + colon + 1)));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

/// A port on 127.0.0.1 that nothing listens on now (taken and let go).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

/// One sample line of the text exposition format.
struct sample {
  std::string name;
  std::map<std::string, std::string> labels;  // values unescaped
  double value = 0;
};

/// The samples of an exposition, or nullopt when a line does not parse.
inline std::optional<std::vector<sample>> parse_exposition(const std::string& text) {
  std::vector<sample> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line[0] == '#') continue;
    sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key;
        while (i < line.size() && line[i] != '=') key += line[i++];
        if (i + 1 >= line.size() || line[i + 1] != '"') return std::nullopt;
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            if (i + 1 >= line.size()) return std::nullopt;
            const char e = line[i + 1];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              return std::nullopt;
            }
            i += 2;
          } else {
            value += line[i++];
          }
        }
        if (i >= line.size()) return std::nullopt;
        ++i;  // closing quote
        s.labels[key] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return std::nullopt;
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') return std::nullopt;
    const std::string number = line.substr(i + 1);
    if (number == "+Inf") {
      s.value = HUGE_VAL;
    } else if (number == "Nan" || number == "NaN") {
      s.value = std::nan("");
    } else {
      char* end = nullptr;
      s.value = std::strtod(number.c_str(), &end);
      if (end == number.c_str()) return std::nullopt;
    }
    out.push_back(std::move(s));
  }
  return out;
}

/// The value of the sample `name` whose labels include `labels`, if any.
inline std::optional<double> value_of(const std::vector<sample>& all, const std::string& name,
                                      const std::map<std::string, std::string>& labels) {
  for (const sample& s : all) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) return s.value;
  }
  return std::nullopt;
}

}  // namespace test
