#define CAF_SUITE libsandbox.containment
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Where a contained session's violations go (sandbox/contain/containment.hpp):
// to the receiver of the execution whose process group caused them while it
// is registered and takes them, held while a launch is under way, else to
// the session. No namespaces are made: the routing alone.

#include <string>
#include <vector>

#include "sandbox/contain/containment.hpp"
#include "sandbox/io/reactor.hpp"

using namespace sandbox;

namespace {

violation denied(std::string path) {
  return violation{violation_kind::read_denied, 0, std::move(path)};
}

struct fixture {
  reactor r{1};
  std::vector<violation> to_session;
  std::unique_ptr<containment> c
    = containment::make(r, containment_settings{}, [this](violation v) {
        to_session.push_back(std::move(v));
      });
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(containment_tests, fixture)

CAF_TEST(a violation of an unknown group outside a launch goes to the session) {
  c->report(42, denied("/secret"));
  CAF_REQUIRE_EQUAL(to_session.size(), 1u);
  CAF_CHECK_EQUAL(to_session[0].detail, "/secret");
  CAF_CHECK_EQUAL(to_session[0].execution, 0u);
}

CAF_TEST(violations before the group registers go with it tagged) {
  std::vector<violation> early;
  std::vector<violation> later;
  {
    containment::launch l{*c};
    c->report(42, denied("/a"));
    c->report(42, denied("/b"));
    CAF_CHECK(to_session.empty());
    l.attach(42, 7, {}, [&](std::vector<violation> xs) {
      early = std::move(xs);
      return [&](violation& v) {
        later.push_back(std::move(v));
        return true;
      };
    });
  }
  CAF_REQUIRE_EQUAL(early.size(), 2u);
  CAF_CHECK_EQUAL(early[0].detail, "/a");
  CAF_CHECK_EQUAL(early[1].execution, 7u);
  c->report(42, denied("/c"));
  CAF_REQUIRE_EQUAL(later.size(), 1u);
  CAF_CHECK_EQUAL(later[0].execution, 7u);
  CAF_CHECK(to_session.empty());
}

CAF_TEST(a receiver that is gone leaves the violation to the session) {
  {
    containment::launch l{*c};
    l.attach(42, 3, {}, [](std::vector<violation>) {
      return [](violation&) { return false; };
    });
  }
  c->report(42, denied("/x"));
  CAF_REQUIRE_EQUAL(to_session.size(), 1u);
  CAF_CHECK_EQUAL(to_session[0].execution, 3u);
  CAF_CHECK_EQUAL(to_session[0].detail, "/x");
}

CAF_TEST(a forgotten group reports to the session) {
  int taken = 0;
  {
    containment::launch l{*c};
    l.attach(42, 1, {}, [&](std::vector<violation>) {
      return [&](violation&) { return ++taken, true; };
    });
  }
  c->forget(42);
  c->report(42, denied("/y"));
  CAF_CHECK_EQUAL(taken, 0);
  CAF_CHECK_EQUAL(to_session.size(), 1u);
}

CAF_TEST(what no launch claimed goes to the session when the last one ends) {
  {
    containment::launch first{*c};
    {
      containment::launch second{*c};
      c->report(99, denied("/z"));
    }
    // The first launch is still under way: the report may be its child's.
    CAF_CHECK(to_session.empty());
  }
  CAF_REQUIRE_EQUAL(to_session.size(), 1u);
  CAF_CHECK_EQUAL(to_session[0].detail, "/z");
}

CAF_TEST(nothing is started until start) {
  CAF_CHECK(!c->started());
  CAF_CHECK(c->session() == nullptr);
  CAF_CHECK(c->writable_directories().size() == 4u);
}

CAF_TEST_FIXTURE_SCOPE_END()
