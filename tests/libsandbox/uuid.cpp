#define CAF_SUITE libsandbox.uuid
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>
#include <unordered_set>

#include "sandbox/uuid.hpp"

// §18: a session id is a random UUID (v4, lowercase canonical form).
CAF_TEST(a new uuid has the lowercase canonical form) {
  for (int i = 0; i < 100; ++i) {
    auto id = sandbox::make_uuid_v4();
    CAF_REQUIRE_EQUAL(id.size(), 36u);
    for (size_t j = 0; j < id.size(); ++j) {
      auto c = id[j];
      if (j == 8 || j == 13 || j == 18 || j == 23)
        CAF_CHECK_EQUAL(c, '-');
      else
        CAF_CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    }
    CAF_CHECK(sandbox::is_uuid(id));
  }
}

// §18: RFC 4122 §4.4 version 4 (random) and variant 10xx bits are set.
CAF_TEST(a new uuid carries the version 4 and RFC 4122 variant bits) {
  for (int i = 0; i < 1000; ++i) {
    auto id = sandbox::make_uuid_v4();
    CAF_CHECK_EQUAL(id[14], '4');
    CAF_CHECK(id[19] == '8' || id[19] == '9' || id[19] == 'a' || id[19] == 'b');
  }
}

// §18: every session gets its own id.
CAF_TEST(ten thousand new uuids are distinct) {
  std::unordered_set<std::string> ids;
  for (int i = 0; i < 10000; ++i)
    ids.insert(sandbox::make_uuid_v4());
  CAF_CHECK_EQUAL(ids.size(), 10000u);
}

// §18: session ids are canonical lowercase UUIDs (actors.node checks a new
// session's id with is_uuid).
CAF_TEST(is_uuid accepts only the lowercase canonical form) {
  using sandbox::is_uuid;
  CAF_CHECK(is_uuid("00000000-0000-0000-0000-000000000000"));
  CAF_CHECK(is_uuid("6ba7b810-9dad-11d1-80b4-00c04fd430c8")); // version 1
  CAF_CHECK(is_uuid("3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c90"));
  CAF_CHECK(!is_uuid(""));
  CAF_CHECK(!is_uuid("3F2B8C1E-7D4A-4E0F-9B6C-2A1D5E8F7C90"));
  CAF_CHECK(!is_uuid("{3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c90}"));
  CAF_CHECK(!is_uuid("urn:uuid:3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c90"));
  CAF_CHECK(!is_uuid("3f2b8c1e7d4a4e0f9b6c2a1d5e8f7c90"));
  CAF_CHECK(!is_uuid("3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c9"));
  CAF_CHECK(!is_uuid("3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c900"));
  CAF_CHECK(!is_uuid("3f2b8c1e7-d4a-4e0f-9b6c-2a1d5e8f7c90"));
  CAF_CHECK(!is_uuid("3f2b8c1g-7d4a-4e0f-9b6c-2a1d5e8f7c90"));
  CAF_CHECK(!is_uuid("3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c9 "));
  CAF_CHECK(!is_uuid("../../../../../../../../../etc/passwd"));
}
