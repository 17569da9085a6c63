#define CAF_SUITE libsandbox.endpoint
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>

#include "sandbox/net/endpoint.hpp"
#include "sandbox/validation.hpp"

using sandbox::errc;
using sandbox::port_endpoint;

// §19: the protocol defaults to http.
CAF_TEST(the endpoint of a port defaults to http on the loopback address) {
  auto url = port_endpoint(20417);
  CAF_REQUIRE(url.has_value());
  CAF_CHECK_EQUAL(*url, "http://127.0.0.1:20417");
}

// §19: `<protocol>://127.0.0.1:<port>` for any scheme and any port number.
CAF_TEST(the endpoint uses the given protocol and any port number) {
  CAF_CHECK_EQUAL(port_endpoint(443, "https").value(), "https://127.0.0.1:443");
  CAF_CHECK_EQUAL(port_endpoint(8080, "ws").value(), "ws://127.0.0.1:8080");
  CAF_CHECK_EQUAL(port_endpoint(1, "git+ssh").value(), "git+ssh://127.0.0.1:1");
  CAF_CHECK_EQUAL(port_endpoint(65535, "a1.b-c").value(),
                  "a1.b-c://127.0.0.1:65535");
  CAF_CHECK_EQUAL(port_endpoint(0).value(), "http://127.0.0.1:0");
}

// §19 and semantics §23: a protocol that is not a lowercase URI scheme is an
// invalid_argument naming it, never a malformed URL.
CAF_TEST(a protocol that is not a lowercase uri scheme is refused) {
  for (std::string bad : {"", "HTTP", "Http", "http://", "http:", "1http",
                          "+http", "h ttp", "ht_tp", "http/", "ws!"}) {
    CAF_MESSAGE("protocol: " << bad);
    auto url = port_endpoint(8080, bad);
    CAF_REQUIRE(url.has_error());
    CAF_CHECK(url.error().code == errc::invalid_argument);
    CAF_CHECK_NOT_EQUAL(url.error().message.find("\"" + bad + "\""),
                        std::string::npos);
  }
}

// Semantics §31 (errors are one line): the offending protocol is quoted with
// control characters and non-ASCII bytes escaped, the same way as every other
// input named in a message (code review #11: one quoting, `quote_for_message`).
CAF_TEST(an invalid protocol is quoted on one printable line) {
  const std::string bad = "ws\n\"\\\x01\xff";
  auto url = port_endpoint(8080, bad);
  CAF_REQUIRE(url.has_error());
  CAF_CHECK(url.error().code == errc::invalid_argument);
  CAF_MESSAGE("message: " << url.error().message);
  CAF_CHECK_NOT_EQUAL(url.error().message.find(R"("ws\x0A\"\\\x01\xFF")"),
                      std::string::npos);
  CAF_CHECK_NOT_EQUAL(url.error().message.find(sandbox::quote_for_message(bad)),
                      std::string::npos);
  for (auto c : url.error().message)
    CAF_CHECK(c >= 0x20 && c < 0x7F);
}
