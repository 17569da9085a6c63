#define CAF_SUITE actors.protocol
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/registration.hpp"

using namespace sandbox;

namespace {

struct fixture {
  actors::system_config cfg;
  caf::actor_system sys{cfg};

  /// Serializes `x` and reads it back, as the network layer does.
  template <class T>
  T round_trip(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    if (auto err = sink(x))
      CAF_FAIL("serialization failed: " << sys.render(err));
    T y;
    caf::binary_deserializer source{sys, buf};
    if (auto err = source(y))
      CAF_FAIL("deserialization failed: " << sys.render(err));
    return y;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(protocol_tests, fixture)

CAF_TEST(output chunks survive serialization byte exact) {
  output_chunk c{stream_kind::err, std::string("a\0\xff\xF0\x9F\x98\x80", 7)};
  auto d = round_trip(c);
  CAF_CHECK(d.stream == stream_kind::err);
  CAF_CHECK_EQUAL(d.data, c.data);
}

CAF_TEST(exec options survive serialization) {
  exec_options o;
  o.timeout = std::chrono::milliseconds{1500};
  o.cwd = "sub/dir";
  o.env = {{"A", "1"}, {"B", "two words"}};
  o.cancel_key = "job";
  o.output_cap = 4096;
  auto d = round_trip(o);
  CAF_CHECK_EQUAL(d.timeout.count(), 1500);
  CAF_CHECK_EQUAL(d.cwd, o.cwd);
  CAF_CHECK(d.env == o.env);
  CAF_CHECK_EQUAL(d.cancel_key, o.cancel_key);
  CAF_CHECK_EQUAL(d.output_cap, 4096u);
}

CAF_TEST(S1 exec results survive serialization with their exit reason) {
  exec_result r;
  r.exit_code = 124;
  r.reason = exit_reason::timeout;
  r.stdout_data = "out";
  r.stderr_data = std::string("e\0rr", 4);
  r.output_files = {"a.txt"};
  r.truncated = true;
  r.dropped_bytes = 99;
  auto d = round_trip(r);
  CAF_CHECK_EQUAL(d.exit_code, 124);
  CAF_CHECK(d.reason == exit_reason::timeout);
  CAF_CHECK_EQUAL(d.stdout_data, "out");
  CAF_CHECK_EQUAL(d.stderr_data, r.stderr_data);
  CAF_CHECK(d.output_files == r.output_files);
  CAF_CHECK(d.truncated);
  CAF_CHECK_EQUAL(d.dropped_bytes, 99u);
}

CAF_TEST(S22 stop receipts survive serialization) {
  stop_receipt s{5, 2, 0, sandbox::containment_mode::cgroup};
  auto d = round_trip(s);
  CAF_CHECK_EQUAL(d.ended, 5u);
  CAF_CHECK_EQUAL(d.killed, 2u);
  CAF_CHECK_EQUAL(d.survivors, 0u);
  CAF_CHECK(d.mode == sandbox::containment_mode::cgroup);
}

CAF_TEST(session configs and infos survive serialization) {
  actors::session_config c;
  c.working_directory = "/w";
  c.home_directory = "/h";
  c.env = {{"K", "V"}};
  c.detached = true;
  c.allow_net = std::vector<std::string>{"127.0.0.1:80", "[::1]:443"};
  c.limits = sandbox::isolation_limits{};
  c.limits->memory = 1u << 29;
  c.limits->processes = 64;
  c.limits->tmp_size = 1u << 28;
  auto dc = round_trip(c);
  CAF_CHECK(dc.detached);
  CAF_REQUIRE(dc.limits);
  CAF_CHECK_EQUAL(dc.limits->memory, 1u << 29);
  CAF_CHECK_EQUAL(dc.limits->processes, 64u);
  CAF_CHECK_EQUAL(dc.limits->tmp_size, 1u << 28);
  // Unset: the node's limits.
  CAF_CHECK(!round_trip(actors::session_config{}).limits);
  CAF_REQUIRE(dc.allow_net);
  CAF_CHECK(*dc.allow_net == *c.allow_net);
  CAF_CHECK(!round_trip(actors::session_config{}).allow_net);
  CAF_CHECK(!dc.owner);
  CAF_CHECK_EQUAL(dc.working_directory, "/w");
  CAF_CHECK_EQUAL(dc.home_directory, "/h");
  CAF_CHECK(dc.env == c.env);
  actors::session_info i{
    "id", "/w", "/h", 20001, 3, true, sandbox::containment_mode::cgroup};
  auto di = round_trip(i);
  CAF_CHECK(di.containment == sandbox::containment_mode::cgroup);
  CAF_CHECK_EQUAL(di.id, "id");
  CAF_CHECK_EQUAL(di.port, 20001);
  CAF_CHECK_EQUAL(di.children, 3u);
  CAF_CHECK(di.stopped);
}

CAF_TEST(sandbox errors cross serialization with code and message) {
  auto err = caf::make_error(errc::path_not_found, "no such file: /x");
  auto d = round_trip(err);
  CAF_CHECK_EQUAL(d.category(), caf::atom("sandbox"));
  CAF_CHECK_EQUAL(d.code(), static_cast<uint8_t>(errc::path_not_found));
  CAF_CHECK_EQUAL(actors::error_code_name(d), "path_not_found");
  CAF_CHECK_EQUAL(actors::error_message(d), "no such file: /x");
  CAF_CHECK_EQUAL(sys.render(d), "path_not_found: no such file: /x");
}

CAF_TEST_FIXTURE_SCOPE_END()
