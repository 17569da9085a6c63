#pragma once

// The set-up of the suites of contained sessions (actors.contained*): a
// node whose sessions are contained, made only where the host can give
// them (a test checks `host_can_contain()` first and returns, with the
// reason, elsewhere), and sessions with a working directory and a home of
// their own that may see, read-only, directories outside their view.
// Include after caf/test/unit_test.hpp.

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/temp_dir.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

namespace sandbox::test {

/// The configuration of a contained node of the suites: the one of every
/// node of the actors suites (`node_fixture::config()`), contained.
inline actors::runtime_config contained_config() {
  auto cfg = node_fixture::config();
  cfg.isolation = isolation_mode::contained;
  return cfg;
}

struct contained_fixture {
  temp_dir dir;
  /// Host directories outside the sessions' view unless a test allows
  /// them (the host's /tmp, where `dir` lies, is not in their view at all).
  outside_dir out;
  /// Empty where the host cannot give contained sessions.
  std::unique_ptr<actors::embedded_node> node;
  /// The home and the working directory of the sessions `make_session`
  /// opens, where their configuration names none (an empty `work`: the
  /// node's default, a new directory below its base directory).
  std::string home = dir.path + "/home";
  std::string work = dir.path + "/work";
  /// Host paths that sessions `make_session` opens may read, not change.
  std::vector<std::string> readable;

  /// Starts `node` with `cfg` and `ncfg` where the host can contain.
  void start(const actors::runtime_config& cfg = contained_config(),
             actors::node_config ncfg = {}) {
    if (host_isolation().missing().empty())
      node = std::make_unique<actors::embedded_node>(cfg, std::move(ncfg));
  }

  /// A session of `node` made of `cfg`, with `home`, `work` where it names
  /// none and `readable` added to its `allow_read`; throws when the node
  /// refuses it.
  actors::blocking_session make_session(actors::session_config cfg = {}) {
    if (cfg.home_directory.empty())
      cfg.home_directory = home;
    if (cfg.working_directory.empty())
      cfg.working_directory = work;
    cfg.allow_read.insert(cfg.allow_read.end(), readable.begin(),
                          readable.end());
    auto s = actors::blocking_session::create(*node, cfg);
    if (!s)
      throw std::runtime_error(s.error().message);
    return std::move(*s);
  }

  /// Runs `cmd` in `s`; throws when it cannot run.
  static exec_result run(actors::blocking_session& s, const std::string& cmd,
                         const exec_options& opts = {}) {
    auto r = s.execute(cmd, opts);
    if (!r)
      throw std::runtime_error(r.error().message);
    return std::move(*r);
  }
};

} // namespace sandbox::test
