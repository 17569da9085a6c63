#include "remote/tls_peer.hpp"

#include <memory>

#include <openssl/bio.h>
#include <openssl/x509.h>

namespace sandbox::actors::detail {

namespace {

// caf::openssl::session keeps its SSL object private and has no call that
// reads the peer's certificate. The one way to it without changing CAF: an
// explicit instantiation may name a private member, and this one hands out
// a pointer to `session::ssl_`.
struct session_ssl {
  using type = SSL* caf::openssl::session::*;
  friend type member(session_ssl);
};

template <class Tag, typename Tag::type Member>
struct expose_member {
  friend typename Tag::type member(Tag) {
    return Member;
  }
};

template struct expose_member<session_ssl, &caf::openssl::session::ssl_>;

} // namespace

SSL* ssl_of(caf::openssl::session& s) {
  return s.*member(session_ssl{});
}

std::string certificate_subject(SSL* ssl) {
  if (ssl == nullptr)
    return {};
  std::unique_ptr<X509, decltype(&X509_free)> cert{
    SSL_get1_peer_certificate(ssl), X509_free};
  if (!cert)
    return {};
  std::unique_ptr<BIO, decltype(&BIO_free)> out{BIO_new(BIO_s_mem()), BIO_free};
  if (!out
      || X509_NAME_print_ex(out.get(), X509_get_subject_name(cert.get()), 0,
                            XN_FLAG_RFC2253)
           < 0)
    return {};
  char* data = nullptr;
  auto len = BIO_get_mem_data(out.get(), &data);
  return len > 0 ? std::string{data, static_cast<size_t>(len)} : std::string{};
}

} // namespace sandbox::actors::detail
