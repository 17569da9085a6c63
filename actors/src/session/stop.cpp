#include "session/state.hpp"

#include <filesystem>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "weak_send.hpp"

namespace sandbox::actors::session_detail {

namespace {

/// Removes the session's own home with everything in it (symlinks are
/// removed, never followed) on the file pool, once nothing of the session
/// runs: its init and PID namespace are ended first. The sweep's receipt
/// comes back in `ended`, and the stop completes with the home gone.
void remove_own_home(self_ptr self) {
  auto& st = self->state;
  st.removing_home = true;
  st.contained.reset();
  boost::asio::post(st.p.rt->file_pool(), [weak = weak_self(self, *st.p.rt),
                                           home = st.p.home_directory,
                                           tag = st.p.id, receipt = *st.sweep] {
    std::error_code ec;
    std::filesystem::remove_all(home, ec);
    if (ec)
      log::logger()->warn("{} cannot remove its home {}: {}", log::tag{tag},
                          home, ec.message());
    send_if_alive<session_actor_impl>(weak, ended_atom_v, receipt);
  });
}

} // namespace

void maybe_complete_stop(self_ptr self) {
  auto& st = self->state;
  if (!st.sweep || st.awaiting > 0 || st.receipt)
    return;
  if (st.p.own_home && !st.home_removed) {
    if (!st.removing_home)
      remove_own_home(self);
    return;
  }
  st.receipt = *st.sweep;
  log::logger()->info("{} stopped: {} ended, {} killed, {} survivors ({})",
                      log::tag{st.p.id}, st.receipt->ended, st.receipt->killed,
                      st.receipt->survivors, to_string(st.receipt->mode));
  // A contained session's PID namespace ends with its init: whatever the
  // sweep could not find there is killed by the kernel. Before the receipt
  // goes out: an init the sweep ended already is reaped at once, its
  // descriptor closed.
  st.contained.reset();
  // A working directory the node made for the session goes with it when
  // the session left nothing there (one rmdir: it fails on a directory
  // that holds anything, which stays for whoever wants its files).
  if (st.p.own_working_directory)
    ::rmdir(st.p.working_directory.c_str());
  // §22: the leased port is free again once nothing of the session runs,
  // before the receipt goes out: whoever got it can lease the port again.
  if (st.p.lease) {
    log::logger()->debug("{} released port {}", log::tag{st.p.id},
                         st.p.lease->port());
    st.p.lease->release();
  }
  // The node forgets a session stopped through its own handle too; told
  // before the receipt goes out, so that whoever got it finds the session
  // gone from the node.
  if (auto node = caf::actor_cast<node_actor_impl>(st.p.node))
    self->send(node, ended_atom_v, st.p.id);
  // Its long-lived processes' handles end with it (every process has
  // ended, and a stopped session answers `session_stopped` for them), and
  // their reservations are free before the receipt goes out. They are
  // linked, but a session that quits normally does not take them along.
  for (auto& [n, proc] : st.processes)
    drop_process(self, proc);
  st.processes.clear();
  st.exited_processes.clear();
  for (auto& w : st.stop_waiters)
    w.deliver(*st.receipt);
  st.stop_waiters.clear();
  // Dropping the handles lets finished spawned processes' actors go away.
  st.children.clear();
  st.groups.clear();
  for (auto& addr : st.finished)
    if (auto p = caf::actor_cast<process_actor_impl>(addr))
      self->send(p, end_atom_v, exit_reason::stopped);
  st.finished.clear();
  // The worker answers `session_stopped` to whoever still holds it.
  st.files = nullptr;
  // A stopped session lives on for local handles, answering
  // `session_stopped`, and goes away with the last one. A handle that went
  // out over the network is never dropped (CAF's registry keeps the actor):
  // such a session quits now, with its worker and processes.
  if (handed_out(self))
    self->quit();
}

void begin_stop(self_ptr self) {
  auto& st = self->state;
  st.stopped = true;
  // Its sweep removes its cgroups, those of ended executions too.
  if (st.cgroups)
    st.cgroups->close();
  // Nothing reaches the session's servers, nor leaves it, from now on.
  if (st.contained)
    st.contained->stop_network();
  if (st.files) {
    // The receipt waits for the worker: its open writes are gone by then.
    ++st.awaiting;
    self->request(st.files, caf::infinite, stop_atom_v)
      .then(
        [self](ok_atom) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        },
        [self](caf::error&) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        });
  }
  std::vector<pid_t> own;
  // Every execution in flight ends with `stopped` before the receipt; the
  // sweep below ends its processes.
  for (auto& [n, x] : st.executions) {
    execution_detail::end_execution<session_actor_impl>(x, *st.self_target,
                                                        exit_reason::stopped);
    own.push_back(x.pid);
    x.awaited = true;
    ++st.awaiting;
  }
  for (auto& [addr, c] : st.children) {
    self->send(c.handle, end_atom_v, exit_reason::stopped);
    own.push_back(c.pid);
    // Every spawned process too.
    ++st.awaiting;
    self->request(c.handle, caf::infinite, wait_atom_v)
      .then(
        [self](const exec_result&) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        },
        [self](caf::error&) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        });
  }
  auto session_cgroup = st.p.rt->session_cgroup(st.p.id);
  // A contained session's init holds its cgroup (`init`, containment::start)
  // from its first command or file operation on: swept even when no
  // command ran, so that its cgroup goes too.
  if (st.groups.empty()
      && !(st.contained && st.contained->started()
           && !session_cgroup.empty())) {
    // Nothing was ever started: no process can carry the marker, so there
    // is nothing to sweep.
    st.sweep = stop_receipt{};
    st.sweep->mode = st.p.rt->containment();
    maybe_complete_stop(self);
    return;
  }
  auto q = executions_query(own, st.groups, st.marker_prefix);
  q.cgroup = std::move(session_cgroup);
  // The init is neither signalled nor counted: it ends (and with it the
  // PID namespace) once the commands did, or with them at the kill stage.
  if (st.contained && st.contained->started() && !q.cgroup.empty())
    q.cgroup_keep = "init";
  q.log_tag = fmt::format("{}", log::tag{st.p.id});
  async_terminate(st.p.rt->reactor(), st.p.rt->reaper(), std::move(q),
                  std::move(own), st.p.rt->config().stop,
                  [weak = weak_self(self, *st.p.rt)](stop_receipt receipt) {
                    send_if_alive<session_actor_impl>(weak, ended_atom_v,
                                                      receipt);
                  });
}

} // namespace sandbox::actors::session_detail
