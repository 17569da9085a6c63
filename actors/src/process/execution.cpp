#include "process/execution.hpp"

namespace sandbox::actors::execution_detail {

bool record_exit(process_execution& ex, int32_t status, caf::error err,
                 exec_result kept) {
  if (!ex.child || ex.exited)
    return false;
  if (err)
    ex.failure = std::move(err);
  else
    ex.status = status;
  if (!ex.kept[0])
    ex.from_reactor = std::move(kept);
  ex.exited = true;
  return true;
}

void settle_exit(process_execution& ex) {
  if (!ex.child)
    return;
  // A descendant still in the child's group (`cmd &`) may outlive it: its
  // zombie, once re-parented to the node, is ours to reap. The report came
  // when the streams ended, after a linger maybe: a descendant that died
  // meanwhile is a zombie the reaper's scans skipped so far. The reaper
  // looks for it on the reactor, not on the owner's thread.
  auto pgid = ex.child->pid();
  if (::kill(-pgid, 0) == 0)
    ex.p.rt->reaper()->collect_group(pgid);
  // Its cgroup serves the session's next execution once empty; not while a
  // timeout's or a cancel's stop may still kill what is in it (that stop
  // removes it), nor after the session's stop (which removes it).
  if (!ex.forced)
    ex.child->return_cgroup();
}

/// Status → exit code and reason (§1, §5, §6).
void evaluate(const process_execution& st, exec_result& r) {
  if (WIFEXITED(st.status)) {
    r.exit_code = WEXITSTATUS(st.status);
    r.reason = exit_reason::exited;
  } else if (WIFSIGNALED(st.status)) {
    r.exit_code = 128 + WTERMSIG(st.status);
    r.reason = exit_reason::signalled;
  }
  if (st.forced) {
    r.reason = *st.forced;
    if (*st.forced == exit_reason::timeout)
      r.exit_code = exit_code_timeout;
    else if (*st.forced == exit_reason::cancelled)
      r.exit_code = exit_code_cancelled;
  }
}

/// The limits the execution hit (contained sessions): SIGXCPU and SIGXFSZ
/// name RLIMIT_CPU and RLIMIT_FSIZE; the counters of the session's cgroup
/// that grew while it ran name the memory limit (a process killed) and the
/// process limit (a fork refused). A limit "ended" the command when its
/// exit shows it: that signal, SIGKILL after an OOM kill, or a failure
/// after a refused fork.
void judge_limits(const process_execution& st, exec_result& r) {
  int sig = WIFSIGNALED(st.status) ? WTERMSIG(st.status) : 0;
  auto add = [&](violation_kind k, std::string detail) {
    if (r.violations.size() < max_violations_per_result)
      r.violations.push_back(violation{k, st.p.exec, std::move(detail)});
    else
      ++r.violations_dropped;
  };
  if (st.forced)
    return;
  if (sig == SIGXCPU) {
    add(violation_kind::cpu_limit, "cpu time");
    r.ended_by = violation_kind::cpu_limit;
  } else if (sig == SIGXFSZ) {
    add(violation_kind::file_size_limit, "file size");
    r.ended_by = violation_kind::file_size_limit;
  }
  if (!st.p.limits)
    return;
  auto& lim = st.p.limits->limits();
  auto now = st.p.limits->read();
  if (now.oom_kills > st.p.limits_before.oom_kills) {
    add(violation_kind::memory_limit,
        fmt::format("memory {} bytes", lim.memory));
    if (sig == SIGKILL)
      r.ended_by = violation_kind::memory_limit;
  }
  if (now.forks_refused > st.p.limits_before.forks_refused) {
    add(violation_kind::process_limit,
        fmt::format("processes {}", lim.processes));
    if (r.ended_by == violation_kind::none && r.exit_code != 0)
      r.ended_by = violation_kind::process_limit;
  }
}

} // namespace sandbox::actors::execution_detail
