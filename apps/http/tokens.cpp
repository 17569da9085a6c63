#include "tokens.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

namespace sandbox::http {

namespace {

constexpr size_t min_token_chars = 16;

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back()))
    s.remove_suffix(1);
  return s;
}

} // namespace

result<std::vector<std::pair<std::string, std::string>>>
token_store::parse(std::string_view text, const std::string& file) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  size_t number = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++number;
    if (line.empty() || line.front() == '#')
      continue;
    auto bad = [&](std::string_view why) {
      return error{errc::invalid_argument,
                   fmt::format("token file {} line {}: {}", file, number, why)};
    };
    auto gap = line.find_first_of(" \t");
    if (gap == std::string_view::npos)
      return bad("expected IDENTITY TOKEN");
    auto identity = line.substr(0, gap);
    auto token = trim(line.substr(gap));
    if (token.find_first_of(" \t") != std::string_view::npos)
      return bad("expected IDENTITY TOKEN, got more than two words");
    if (token.size() < min_token_chars)
      return bad(fmt::format("the token of {} is {} characters, fewer than "
                             "{}",
                             identity, token.size(), min_token_chars));
    for (char c : token)
      if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f)
        return bad("a token is printable ASCII without spaces");
    if (!seen.emplace(token).second)
      return bad("this token is given twice");
    out.emplace_back(std::string{identity}, std::string{token});
  }
  return out;
}

result<size_t> token_store::load(const std::string& file) {
  std::ifstream in{file, std::ios::binary};
  if (!in)
    return error{errc::invalid_argument,
                 fmt::format("token file {}: {}", file, std::strerror(errno))};
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse(text.str(), file);
  if (!parsed)
    return parsed.error();
  if (parsed->empty())
    return error{errc::invalid_argument,
                 fmt::format("token file {} holds no token", file)};
  std::lock_guard<std::mutex> guard{mtx_};
  tokens_ = std::move(*parsed);
  return tokens_.size();
}

result<void> token_store::generate(const std::string& identity,
                                   const std::string& file) {
  unsigned char raw[24];
  if (::RAND_bytes(raw, sizeof raw) != 1)
    return error{errc::io_error, "RAND_bytes failed"};
  std::string token;
  for (auto b : raw)
    token += fmt::format("{:02x}", b);
  auto tmp = file + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return error{errc::io_error,
                 fmt::format("open {}: {}", tmp, std::strerror(errno))};
  auto text = token + "\n";
  auto n = ::write(fd, text.data(), text.size());
  auto err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return error{errc::io_error,
                 fmt::format("write {}: {}", tmp, std::strerror(err))};
  if (::rename(tmp.c_str(), file.c_str()) != 0)
    return error{errc::io_error,
                 fmt::format("rename {}: {}", file, std::strerror(errno))};
  std::lock_guard<std::mutex> guard{mtx_};
  tokens_ = {{identity, token}};
  return {};
}

std::optional<std::string>
token_store::identify(std::string_view authorization) const {
  constexpr std::string_view scheme = "Bearer ";
  if (authorization.size() <= scheme.size())
    return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i]))
        != std::tolower(static_cast<unsigned char>(scheme[i])))
      return std::nullopt;
  auto token = trim(authorization.substr(scheme.size()));
  std::optional<std::string> found;
  std::lock_guard<std::mutex> guard{mtx_};
  // Every token is compared, each in constant time: how long the check
  // takes tells nothing about which one (nearly) matched.
  for (auto& [identity, known] : tokens_)
    if (known.size() == token.size()
        && ::CRYPTO_memcmp(known.data(), token.data(), token.size()) == 0)
      found = identity;
  return found;
}

} // namespace sandbox::http
