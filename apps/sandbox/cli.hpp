#pragma once

// Shared pieces of the `sandbox` CLI: global options, output in text or
// JSON lines, errors, and the session a subcommand runs in.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sandbox/actors/blocking_session.hpp"

namespace sandbox::cli {

/// Options every subcommand accepts, before or after its name.
struct global_options {
  std::string node;
  bool json = false;
  std::string log_level = "warn";
  std::string session;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
};

/// Exit statuses of the CLI (DESIGN.md §5).
constexpr int exit_ok = 0;
constexpr int exit_error = 1;
constexpr int exit_usage = 2;

/// Writes all of `data` to `fd` (stdout/stderr), unbuffered.
void write_fd(int fd, std::string_view data);

/// Prints one JSON object as a line on stdout.
void print_json(const nlohmann::ordered_json& j);

/// Prints an error (one line on stderr, or a JSON error object on stdout
/// with --json) and returns `exit_error`.
int report(const global_options& g, const sandbox::error& err);

/// Returns "data" or "data_b64" members for `bytes`: UTF-8 stays text.
void put_bytes(nlohmann::ordered_json& j, const std::string& bytes);

/// Encodes bytes as base64 (RFC 4648, with padding).
std::string base64(std::string_view bytes);

/// Parses "K=V"; the name must be valid (R3). Errors name the entry.
result<std::pair<std::string, std::string>> parse_env_entry(
  const std::string& entry);

/// Converts --timeout seconds (fractions allowed) to milliseconds.
result<std::chrono::milliseconds> parse_timeout(double seconds);

/// Runs `body` with a session to work in: an ephemeral session whose working
/// directory is the current directory (stopped on return), or the one
/// named by --session on a remote node. Returns the exit status.
int with_session(const global_options& g,
                 const std::function<int(actors::blocking_session&)>& body);

/// The node every subcommand without --node uses.
actors::embedded_node& embedded();

/// A subcommand: adds itself to `app`; `run` is called when it was chosen.
struct command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

command add_run(CLI::App& app, global_options& g);
command add_code(CLI::App& app, global_options& g);
command add_read(CLI::App& app, global_options& g);
command add_write(CLI::App& app, global_options& g);
command add_rm(CLI::App& app, global_options& g);
command add_ls(CLI::App& app, global_options& g);
command add_stat(CLI::App& app, global_options& g);
command add_session(CLI::App& app, global_options& g);

} // namespace sandbox::cli
