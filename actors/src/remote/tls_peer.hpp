#pragma once

// The client certificate of a TLS connection of the node's door (private).

#include <string>

#include <caf/openssl/session.hpp>
#include <openssl/ssl.h>

namespace sandbox::actors::detail {

/// The TLS object of a caf::openssl session.
SSL* ssl_of(caf::openssl::session& s);

/// The subject of the certificate the peer of `ssl` presented, in RFC 2253
/// form (`CN=agent-1,O=example`); empty without one (or before the TLS
/// handshake is done).
std::string certificate_subject(SSL* ssl);

} // namespace sandbox::actors::detail
