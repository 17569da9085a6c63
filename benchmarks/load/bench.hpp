#pragma once

// Shared vocabulary of the load generator: the options of a run, one row of
// the results table, and the measuring helpers every scenario uses (clock,
// percentiles, resident memory, raw process launches, a scratch directory).
//
// Every scenario measures its own baseline in the same run and reports
// `ours / baseline`, so the figures survive a noisy machine.

#include <sys/types.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "runtime.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/process/proc_stats.hpp"

namespace sandbox::bench {

using clock = std::chrono::steady_clock;

/// Seconds elapsed since `start`.
inline double seconds_since(clock::time_point start) {
  return std::chrono::duration<double>(clock::now() - start).count();
}

/// Milliseconds between two time points.
inline double ms_between(clock::time_point a, clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// What one run of the load generator does.
struct options {
  /// A ~30 s smoke run: shorter phases, smaller inputs.
  bool quick = false;
  /// Length of one timed phase (a throughput measurement).
  double phase_seconds = 3.0;
  /// Output bytes pushed through the streaming path (scenario 4).
  uint64_t output_bytes = uint64_t{1} << 30;
  /// Entries of the listed tree (scenario 5).
  uint64_t tree_entries = 200000;
  /// Touched memory the node holds in scenario 7.
  uint64_t hold_bytes = uint64_t{4} << 30;
  /// Sessions created in scenario 8.
  size_t sessions = 1000;
  /// Children of the stopped session in scenario 9.
  size_t stop_children = 256;
  /// Runs of the chunk-latency child (scenario 3).
  size_t chunk_runs = 20;
  /// Grace period of the node's stop plan (SIGTERM → SIGKILL).
  std::chrono::milliseconds grace{1000};
  /// Diagnostic: leave `reap_all_orphans` off (a node runs with it on).
  bool reap_all_orphans = true;
  /// Scratch directory of this run (created by main, removed at the end).
  std::string scratch;
  /// Absolute path of this executable (its helper modes are the children
  /// of some scenarios).
  std::string self_exe;
};

/// How a row fares against its goal.
enum class verdict { none, met, not_met, not_available };

/// One line of the results table (and of results.csv).
struct row {
  /// Scenario number (1–10 as in the issue; 11: contained vs none; 12: the
  /// scheduler).
  int scenario = 0;
  /// Stable key for plots and scripts, e.g. "exec_c8".
  std::string key;
  /// What was measured, for people.
  std::string label;
  /// Unit of `ours` and `baseline`.
  std::string unit;
  double ours = std::numeric_limits<double>::quiet_NaN();
  double baseline = std::numeric_limits<double>::quiet_NaN();
  /// The goal, for people (empty: none).
  std::string goal;
  verdict result = verdict::none;
  /// Anything a reader needs to interpret the row.
  std::string note;

  /// `ours / baseline`, NaN when either is missing or the baseline is 0.
  double ratio() const {
    if (std::isnan(ours) || std::isnan(baseline) || baseline == 0)
      return std::numeric_limits<double>::quiet_NaN();
    return ours / baseline;
  }
};

/// Returns `met` or `not_met`.
inline verdict judge(bool ok) {
  return ok ? verdict::met : verdict::not_met;
}

/// A scenario group: runs and returns its rows.
using scenario_fn = std::function<std::vector<row>(const options&)>;

/// The node configuration every scenario uses: only a node, so it reaps all
/// orphans; the grace period comes from the options.
actors::runtime_config node_config(const options& opt);

/// A session configuration whose working directory is `<scratch>/<name>`
/// and whose home is `<scratch>/home`.
actors::session_config session_config_for(const options& opt,
                                          const std::string& name);

/// Creates a session or throws `std::runtime_error` naming the failure.
actors::blocking_session make_session(actors::basic_node& node,
                                      const options& opt,
                                      const std::string& name);

/// Stops `s` or throws `std::runtime_error`; returns the receipt.
stop_receipt stop_session(actors::blocking_session& s);

// -- statistics ---------------------------------------------------------------

/// The `q` quantile (0..1) of `xs` by nearest rank; NaN when empty.
double percentile(std::vector<double> xs, double q);

// -- memory -------------------------------------------------------------------

// resident_bytes(), peak_resident_bytes() and thread_count() come from
// sandbox/process/proc_stats.hpp.

/// Heap bytes in use (malloc's view over all arenas, mmapped chunks
/// included): unlike RSS, not hidden by memory freed earlier and reused.
uint64_t heap_in_use();

/// CPU seconds used so far by this process and by its reaped children,
/// and the context switches of this process's threads (voluntary and
/// involuntary): each hand-over to a sleeping thread costs one.
struct cpu_time {
  double self = 0;
  double children = 0;
  double switches = 0;
};

/// Reads getrusage for this process and its children.
cpu_time cpu_now();

/// Measures the peak resident memory of a phase: VmHWM is reset at start
/// (clear_refs "5"), and a sampler reads statm every few milliseconds in
/// case the reset is not permitted.
class peak_meter {
public:
  peak_meter();
  ~peak_meter();
  peak_meter(const peak_meter&) = delete;
  peak_meter& operator=(const peak_meter&) = delete;

  /// Bytes by which the peak exceeded the resident memory at construction.
  uint64_t growth();

private:
  struct impl;
  impl* impl_;
};

// -- raw processes (baselines) ------------------------------------------------

/// Starts `argv` with posix_spawn and nothing else: no pipes, no file
/// actions (unless `stdout_fd` >= 0, which becomes the child's stdout), in a
/// new process group when `own_group`. Returns the pid or -1.
pid_t raw_spawn(const std::vector<std::string>& argv, int stdout_fd = -1,
                bool own_group = false);

/// Waits for `pid`; returns its wait status (-1 on error).
int raw_wait(pid_t pid);

// -- files --------------------------------------------------------------------

/// Creates `path` and its parents (mkdir -p); false on failure.
bool make_dirs(const std::string& path);

/// Removes the tree at `path` (errors are ignored).
void remove_tree(const std::string& path);

/// Quotes `word` for /bin/sh.
std::string sh_quote(const std::string& word);

// -- scenario groups ----------------------------------------------------------

/// 1 and 2: exec throughput at concurrency 1, 8, 64 and latency at 1.
std::vector<row> run_exec(const options& opt);

/// 3: chunk latency (gap seen by the subscriber minus the child's sleep).
std::vector<row> run_chunk(const options& opt);

/// 4: output throughput of the streaming path and the node's peak memory.
std::vector<row> run_output(const options& opt);

/// 5: listing a large tree.
std::vector<row> run_list(const options& opt);

/// 6: writing and reading a 1 MiB file.
std::vector<row> run_files(const options& opt);

/// 7: spawn rate while the node holds a lot of touched memory.
std::vector<row> run_spawn(const options& opt);

/// 8: session create + stop rate and memory per idle session.
std::vector<row> run_sessions(const options& opt);

/// 9: stop of a session with many running children.
std::vector<row> run_stop(const options& opt);

/// 10: a remote node over loopback against the embedded node.
std::vector<row> run_remote(const options& opt);

/// 11: contained sessions against none: exec `true` at concurrency 1 and 8
/// with latency, and session creation up to its first execution.
std::vector<row> run_contained(const options& opt);

/// 12: the node's scheduler (sharing, stealing, tuned stealing) against
/// CAF's default: exec `true` at concurrency 1 and 8, session round trips.
std::vector<row> run_scheduler(const options& opt);

/// 13: long-lived processes: first byte of an attach, memory per idle
/// process.
std::vector<row> run_processes(const options& opt);

/// 14: the HTTP door against the embedded node: exec `true` at
/// concurrency 8, 256 MiB streamed as NDJSON, memory of idle connections.
std::vector<row> run_http(const options& opt);

// -- helpers run as children --------------------------------------------------

/// Runs the helper mode `mode` of this executable (a child of a scenario)
/// and returns its exit status.
int run_helper(const std::string& mode);

// -- report -------------------------------------------------------------------

/// Prints the table to stdout.
void print_table(const std::vector<row>& rows);

/// Writes `dir/results.csv`; false on failure.
bool write_csv(const std::vector<row>& rows, const std::string& dir);

/// Renders PNG plots into `dir` with gnuplot; says so and returns false
/// when gnuplot is missing or fails.
bool render_plots(const std::vector<row>& rows, const std::string& dir);

} // namespace sandbox::bench
