#include "sandbox/actors/tls.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/sec.hpp>
#include <caf/thread_hook.hpp>
#include <spdlog/spdlog.h>

#include "sandbox/log.hpp"

namespace sandbox::actors {

namespace {

// One role of the three files: what the messages call it.
struct role {
  const char* name; // "TLS certificate"
  const char* flag; // "--tls-cert"
};

constexpr role cert_role{"TLS certificate", "--tls-cert"};
constexpr role key_role{"TLS key", "--tls-key"};
constexpr role ca_role{"TLS CA", "--tls-ca"};

// PEM files are a few KiB; anything much larger is the wrong file.
constexpr off_t max_pem_size = 1 << 20;

template <class T, void (*Free)(T*)>
struct openssl_deleter {
  void operator()(T* x) const noexcept {
    Free(x);
  }
};

using bio_ptr = std::unique_ptr<BIO, openssl_deleter<BIO, BIO_free_all>>;
using ssl_ctx_ptr
  = std::unique_ptr<SSL_CTX, openssl_deleter<SSL_CTX, SSL_CTX_free>>;

error bad(std::string msg) {
  return error{errc::invalid_argument, std::move(msg)};
}

// "the TLS key /etc/x.key (--tls-key)"
std::string describe(const role& r, const std::string& path) {
  return std::string{"the "} + r.name + " " + path + " (" + r.flag + ")";
}

// Drains OpenSSL's error queue of this thread into one line of reasons
// ("no start line; bad decrypt"), so no stale error leaks into a later call.
std::string openssl_errors() {
  std::string msg;
  while (auto code = ERR_get_error()) {
    if (!msg.empty())
      msg += "; ";
    if (auto reason = ERR_reason_error_string(code)) {
      msg += reason;
    } else {
      char buf[256];
      ERR_error_string_n(code, buf, sizeof(buf));
      msg += buf;
    }
  }
  return msg.empty() ? "no detail from OpenSSL" : msg;
}

// Checks that `path` is a readable regular file of PEM size before OpenSSL
// opens it: opened non-blocking, so that a FIFO given by mistake is refused
// instead of blocking the start-up.
result<void> check_file(const role& r, const std::string& path) {
  auto fail = [&](int err) {
    return bad("cannot read " + describe(r, path) + ": " + std::strerror(err));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return fail(errno);
  struct stat st {};
  int rc = ::fstat(fd, &st);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    return fail(err);
  if (!S_ISREG(st.st_mode))
    return bad(describe(r, path) + " is not a regular file");
  if (st.st_size > max_pem_size)
    return bad(describe(r, path) + " is too large for a PEM file ("
               + std::to_string(st.st_size) + " bytes)");
  return {};
}

std::string to_string(const ASN1_TIME* t) {
  bio_ptr out{BIO_new(BIO_s_mem())};
  if (!out || ASN1_TIME_print(out.get(), t) != 1)
    return "an unreadable date";
  char* data = nullptr;
  auto len = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

// Whether the oldest error on this thread's queue is OpenSSL's TLS layer
// refusing what parsed fine (a key too small for the security level, a
// digest too weak), rather than a file that does not parse.
bool refused_by_policy() {
  return ERR_GET_LIB(ERR_peek_error()) == ERR_LIB_SSL;
}

// Called by OpenSSL when the key is encrypted. Without it, OpenSSL would
// ask for a passphrase on the terminal: refuse instead and remember it.
int refuse_passphrase(char*, int, int, void* asked) {
  *static_cast<bool*>(asked) = true;
  return -1;
}

// The certificate (first PEM block) and its chain, loaded as caf::openssl
// loads them, then checked for its dates: an expired certificate would
// only show at the peer, as a handshake that fails for a reason the peer
// does not tell us.
result<void> load_certificate(SSL_CTX* ctx, const std::string& path) {
  if (SSL_CTX_use_certificate_chain_file(ctx, path.c_str()) != 1) {
    if (refused_by_policy())
      return bad("OpenSSL refuses " + describe(cert_role, path) + ": "
                 + openssl_errors());
    if (SSL_CTX_get0_certificate(ctx) != nullptr)
      return bad("a chain certificate after the first in "
                 + describe(cert_role, path)
                 + " does not parse: " + openssl_errors());
    return bad(describe(cert_role, path)
               + " holds no PEM certificate: " + openssl_errors());
  }
  auto cert = SSL_CTX_get0_certificate(ctx);
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
    return bad(describe(cert_role, path) + " expired on "
               + to_string(X509_get0_notAfter(cert)));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0)
    return bad(describe(cert_role, path) + " is not valid before "
               + to_string(X509_get0_notBefore(cert)));
  return {};
}

// The key, after the certificate: OpenSSL checks that they match.
result<void> load_key(SSL_CTX* ctx, const tls_config& cfg) {
  bool asked = false;
  SSL_CTX_set_default_passwd_cb(ctx, refuse_passphrase);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, &asked);
  auto loaded = SSL_CTX_use_PrivateKey_file(ctx, cfg.key_file.c_str(),
                                            SSL_FILETYPE_PEM);
  SSL_CTX_set_default_passwd_cb(ctx, nullptr);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
  auto mismatch = [&] {
    ERR_clear_error();
    return bad(describe(key_role, cfg.key_file) + " does not match "
               + describe(cert_role, cfg.certificate_file));
  };
  if (asked) {
    ERR_clear_error();
    return bad(describe(key_role, cfg.key_file)
               + " is encrypted and there is no way to give its passphrase:"
                 " store it decrypted (openssl pkey -in KEY -out NEW_KEY),"
                 " readable by its owner only");
  }
  if (loaded != 1) {
    auto code = ERR_peek_last_error();
    if (ERR_GET_LIB(code) == ERR_LIB_X509
        && (ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH
            || ERR_GET_REASON(code) == X509_R_KEY_TYPE_MISMATCH))
      return mismatch();
    return bad(describe(key_role, cfg.key_file)
               + " holds no PEM private key: " + openssl_errors());
  }
  // A key of another type than the certificate's is accepted above, for
  // a certificate of that type to come.
  if (SSL_CTX_check_private_key(ctx) != 1)
    return mismatch();
  return {};
}

result<void> load_ca(SSL_CTX* ctx, const std::string& path) {
  if (SSL_CTX_load_verify_locations(ctx, path.c_str(), nullptr) != 1) {
    auto code = ERR_peek_last_error();
    if (ERR_GET_LIB(code) == ERR_LIB_X509
        && ERR_GET_REASON(code) == X509_R_NO_CERTIFICATE_OR_CRL_FOUND) {
      ERR_clear_error();
      return bad(describe(ca_role, path) + " holds no PEM certificate");
    }
    return bad(describe(ca_role, path)
               + " does not parse: " + openssl_errors());
  }
  // A file of revocation lists only loads too, but verifies nothing.
  auto objects = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
  for (int i = 0; i < sk_X509_OBJECT_num(objects); ++i)
    if (X509_OBJECT_get_type(sk_X509_OBJECT_value(objects, i)) == X509_LU_X509)
      return {};
  return bad(describe(ca_role, path) + " holds no PEM certificate");
}

// Builds the context caf::openssl builds for every connection
// (session::create_ssl_context in CAF 0.17.6), from the same files, with
// OpenSSL's own loaders. CAF does this only when a connection is made, and
// throws from its network thread when it fails, which ends the process:
// whatever OpenSSL would refuse then (a key too small for its security
// level, say) is refused here, naming the file.
result<void> load_like_caf(const tls_config& cfg) {
  for (auto [path, r] :
       {std::pair{&cfg.certificate_file, &cert_role},
        std::pair{&cfg.key_file, &key_role}, std::pair{&cfg.ca_file, &ca_role}})
    if (auto ok = check_file(*r, *path); !ok)
      return ok;
  ssl_ctx_ptr ctx{SSL_CTX_new(TLS_method())};
  if (!ctx)
    return bad("cannot create an OpenSSL context: " + openssl_errors());
  if (auto ok = load_certificate(ctx.get(), cfg.certificate_file); !ok)
    return ok;
  if (auto ok = load_key(ctx.get(), cfg); !ok)
    return ok;
  if (auto ok = load_ca(ctx.get(), cfg.ca_file); !ok)
    return ok;
  if (SSL_CTX_set_cipher_list(ctx.get(), "HIGH:!aNULL:!MD5") != 1)
    return bad("OpenSSL has no cipher for mutual TLS: " + openssl_errors());
  return {};
}

// -- observing handshakes -----------------------------------------------------
//
// caf::openssl makes an SSL_CTX for every connection, keeps its SSL objects
// to itself and reports a failed handshake as nothing but a closed
// connection (its own log is compiled out of Debian's build). OpenSSL calls
// the "new" function of an ex_data index for every SSL_CTX of the process
// made after the index exists. Ours returns at once unless the context is
// made on a thread of an actor system that `configure_network` set up for
// TLS (CAF makes a node's contexts on its multiplexer thread, a client's
// on its openssl middleman actor's thread; a thread hook marks them all):
// the host application's own contexts are left alone. A context of CAF's
// gets an info callback, which sees the alerts and the end of every
// handshake on both sides. It decides nothing: the handshake itself is
// CAF's and OpenSSL's, unchanged.
//
// It also repairs one fault of caf::openssl 0.17.6. OpenSSL reports a
// failure through the error queue of the thread, and SSL_get_error() reads
// that queue to classify the next call that returns <= 0. CAF empties the
// queue only inside a log statement, compiled out of Debian's build, so the
// errors of one failed handshake stay on CAF's network thread, and the next
// would-block read or write of ANY other connection on that thread is taken
// for a fatal error: one refused client drops every connected one. Each
// socket of CAF's sessions gets a BIO callback that empties the queue right
// before the socket is read or written: errors of earlier calls are gone,
// errors of the current call (pushed after its I/O) are still there.

// The reason of a client's failed handshake with one peer.
struct failure_record {
  std::string addr;
  uint16_t port = 0;
  std::string reason;
};

// Client side: the latest failures, oldest first; at most a few, guarded by
// `failures_mtx` (OpenSSL calls us on CAF's network thread, the reader is
// the thread that connected).
std::mutex failures_mtx;
std::deque<failure_record> failures;
constexpr size_t max_failures = 16;

// ex_data index of an SSL: set once its failure was logged or recorded, so
// that an alert and the end of the handshake count as one failure.
int reported_index = -1;

std::pair<std::string, uint16_t> peer_of(const SSL* ssl) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto fd = SSL_get_fd(ssl);
  char buf[INET6_ADDRSTRLEN] = "";
  if (fd < 0
      || ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return {"an unknown peer", 0};
  if (addr.ss_family == AF_INET) {
    auto in = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    return {buf, ntohs(in->sin_port)};
  }
  if (addr.ss_family == AF_INET6) {
    auto in = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof(buf));
    return {buf, ntohs(in->sin6_port)};
  }
  return {"a non-IP peer", 0};
}

std::string alert_text(int value) {
  // OpenSSL 3.0 has no text for TLS 1.3's "certificate required".
  if ((value & 0xff) == SSL_AD_CERTIFICATE_REQUIRED)
    return "certificate required";
  return SSL_alert_desc_string_long(value);
}

// Alerts a peer sends when it does not accept our certificate (or its
// absence).
bool is_certificate_alert(int value) {
  switch (value & 0xff) {
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_CERTIFICATE_REQUIRED:
    case SSL_AD_HANDSHAKE_FAILURE:
      return true;
    default:
      return false;
  }
}

// The last error `forget_stale_errors` took off this thread's queue. A
// handshake that fails pushes its error, then writes its alert, which
// empties the queue: the reason is taken from here then.
thread_local unsigned long cleared_error = 0;

// Why the handshake of `ssl` just failed on this side.
std::string local_reason(const SSL* ssl, bool server) {
  auto verify = SSL_get_verify_result(ssl);
  // Signed by the CA, but its extended key usage does not allow this end
  // of a handshake (a node's certificate used by a client, say).
  if (verify == X509_V_ERR_INVALID_PURPOSE)
    return std::string{server ? "the client's certificate is not for TLS "
                                "clients (its extended key usage lacks "
                                "clientAuth)"
                              : "the node's certificate is not for TLS "
                                "servers (its extended key usage lacks "
                                "serverAuth)"}
           + ": " + X509_verify_cert_error_string(verify);
  if (verify != X509_V_OK)
    return std::string{server ? "the client's certificate"
                              : "the node's certificate"}
           + " did not verify against --tls-ca: "
           + X509_verify_cert_error_string(verify);
  auto code = ERR_peek_last_error();
  if (code == 0)
    code = cleared_error;
  std::string what = code != 0 && ERR_reason_error_string(code) != nullptr
                       ? ERR_reason_error_string(code)
                       : "the connection ended";
  if (ERR_GET_LIB(code) == ERR_LIB_SSL
      && (ERR_GET_REASON(code) == SSL_R_WRONG_VERSION_NUMBER
          || ERR_GET_REASON(code) == SSL_R_PACKET_LENGTH_TOO_LONG
          || ERR_GET_REASON(code) == SSL_R_HTTP_REQUEST))
    return std::string{server ? "the client" : "the node"}
           + " does not speak TLS (" + what + ")";
  return what;
}

void record(const SSL* ssl, std::string reason, bool overwrite) {
  auto mut = const_cast<SSL*>(ssl);
  bool seen = SSL_get_ex_data(mut, reported_index) != nullptr;
  if (seen && !overwrite)
    return;
  SSL_set_ex_data(mut, reported_index, mut);
  auto [addr, port] = peer_of(ssl);
  if (SSL_is_server(ssl)) {
    if (!seen)
      log::logger()->warn("refused TLS handshake with {}:{}: {}", addr, port,
                          reason);
    return;
  }
  std::lock_guard<std::mutex> guard{failures_mtx};
  if (seen && !failures.empty() && failures.back().port == port
      && failures.back().addr == addr)
    failures.pop_back();
  failures.push_back({std::move(addr), port, std::move(reason)});
  if (failures.size() > max_failures)
    failures.pop_front();
}

long forget_stale_errors(BIO*, int oper, const char*, size_t, int, long,
                         int ret, size_t*) {
  if ((oper & BIO_CB_RETURN) == 0
      && (oper == BIO_CB_READ || oper == BIO_CB_WRITE)) {
    cleared_error = ERR_peek_last_error();
    ERR_clear_error();
  }
  return ret;
}

void on_tls_event(const SSL* ssl, int where, int value) {
  if ((where & SSL_CB_HANDSHAKE_START) != 0) {
    // CAF has set the socket by now (SSL_set_fd, then SSL_connect or
    // SSL_accept); one BIO serves reads and writes.
    for (auto bio : {SSL_get_rbio(ssl), SSL_get_wbio(ssl)})
      if (bio != nullptr && BIO_get_callback_ex(bio) != forget_stale_errors)
        BIO_set_callback_ex(bio, forget_stale_errors);
    return;
  }
  if ((where & SSL_CB_HANDSHAKE_DONE) != 0
      && log::logger()->should_log(spdlog::level::debug)) {
    auto [addr, port] = peer_of(ssl);
    log::logger()->debug("TLS with {}:{}: {} {}", addr, port,
                         SSL_get_version(ssl), SSL_get_cipher_name(ssl));
    return;
  }
  if ((where & SSL_CB_READ_ALERT) == SSL_CB_READ_ALERT
      && (value >> 8) == SSL3_AL_FATAL) {
    auto text = alert_text(value);
    auto reason = is_certificate_alert(value)
                    ? std::string{SSL_is_server(ssl)
                                    ? "the client refused this node's"
                                    : "the node refused this client's"}
                        + " certificate (TLS alert: " + text + ")"
                    : "the peer ended the handshake (TLS alert: " + text + ")";
    record(ssl, std::move(reason), false);
    return;
  }
  if ((where & SSL_CB_EXIT) != 0
      && std::strcmp(SSL_state_string(ssl), "SSLERR") == 0) {
    bool server = SSL_is_server(ssl) != 0;
    // A certificate that does not verify is the most precise reason there
    // is: it replaces an alert recorded before.
    bool verify_failed = SSL_get_verify_result(ssl) != X509_V_OK;
    record(ssl, local_reason(ssl, server), verify_failed);
  }
}

// TLS 1.3 suites, fastest first where AES-NI exists (AES-128-GCM encrypts
// about 15 % faster than OpenSSL's first choice, AES-256-GCM); both are
// TLS 1.3's standard suites, and ChaCha20 stays for peers without AES-NI.
constexpr const char* tls13_suites
  = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
    "TLS_CHACHA20_POLY1305_SHA256";

// Set on the threads of the actor systems `configure_network` set up for
// TLS, for as long as they run; false on every other thread.
thread_local bool on_tls_system_thread = false;

class mark_tls_system_threads : public caf::thread_hook {
public:
  void init(caf::actor_system&) override {
    // nop
  }

  void thread_started() override {
    on_tls_system_thread = true;
  }

  void thread_terminates() override {
    on_tls_system_thread = false;
  }
};

void observe_context(void* parent, void*, CRYPTO_EX_DATA*, int, long, void*) {
  // Not CAF's: the host application's (or another library's) context.
  if (!on_tls_system_thread)
    return;
  auto ctx = static_cast<SSL_CTX*>(parent);
  SSL_CTX_set_info_callback(ctx, on_tls_event);
  // OpenSSL has set its defaults by now; CAF sets only the TLS <= 1.2
  // cipher list after this, which leaves these suites alone.
  if (SSL_CTX_set_ciphersuites(ctx, tls13_suites) != 1)
    ERR_clear_error(); // OpenSSL's own defaults stay
}

void install_handshake_observer() {
  static std::once_flag once;
  std::call_once(once, [] {
    reported_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr,
                                          nullptr);
    SSL_CTX_get_ex_new_index(0, nullptr, observe_context, nullptr, nullptr);
  });
}

// Takes the latest recorded failure of a handshake with `host:port` and
// forgets every older one of that endpoint; a host name matches any address
// on that port.
std::string take_failure(const std::string& host, uint16_t port) {
  unsigned char buf[sizeof(in6_addr)];
  bool numeric = ::inet_pton(AF_INET, host.c_str(), buf) == 1
                 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
  auto matches = [&](const failure_record& x) {
    return x.port == port && (!numeric || x.addr == host);
  };
  std::lock_guard<std::mutex> guard{failures_mtx};
  std::string reason;
  for (auto i = failures.rbegin(); i != failures.rend(); ++i)
    if (matches(*i)) {
      reason = std::move(i->reason);
      break;
    }
  for (auto i = failures.begin(); i != failures.end();)
    i = matches(*i) ? failures.erase(i) : std::next(i);
  return reason;
}

} // namespace

result<void> validate(const tls_config& cfg) {
  if (!cfg.enabled())
    return {};
  const std::pair<const std::string*, const role*> files[] = {
    {&cfg.certificate_file, &cert_role},
    {&cfg.key_file, &key_role},
    {&cfg.ca_file, &ca_role},
  };
  for (auto& [path, r] : files)
    if (path->empty())
      return bad(std::string{"TLS needs --tls-cert, --tls-key and --tls-ca"
                             " together: "}
                 + r->flag + " (the " + r->name + ") is missing");
  ERR_clear_error();
  auto res = load_like_caf(cfg);
  ERR_clear_error();
  return res;
}

void configure_network(caf::actor_system_config& sys_cfg,
                       const tls_config& cfg) {
  sys_cfg.load<caf::io::middleman>();
  if (!cfg.enabled())
    return;
  // With a certificate, a key and a CA, caf::openssl verifies the peer on
  // both ends (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) and
  // offers no anonymous cipher. Leaving them empty would give anonymous
  // ECDH instead: encrypted, but anyone may connect.
  sys_cfg.load<caf::openssl::manager>();
  sys_cfg.openssl_certificate = cfg.certificate_file;
  sys_cfg.openssl_key = cfg.key_file;
  sys_cfg.openssl_cafile = cfg.ca_file;
  sys_cfg.add_thread_hook<mark_tls_system_threads>();
  install_handshake_observer();
}

std::string describe_handshake_failure(const std::string& host, uint16_t port,
                                       bool tls, const caf::error& err) {
  // A handshake that fails at once (the node's first bytes are not TLS)
  // ends the connect as `cannot_connect_to_node`, a later one as
  // `disconnect_during_handshake`: the observer's record tells.
  auto reason = take_failure(host, port);
  if (tls && !reason.empty())
    return "TLS handshake failed: " + reason;
  if (err.category() != caf::atom("system"))
    return "";
  auto code = static_cast<caf::sec>(err.code());
  // caf::openssl gives no context when the handshake failed at once; a
  // failed TCP connect has one ("ip_connect failed", ...).
  if (tls && code == caf::sec::cannot_connect_to_node && err.context().empty())
    return "TLS handshake failed: the node ended the connection at once "
           "(does it serve without TLS?)";
  if (code != caf::sec::disconnect_during_handshake)
    return "";
  if (!tls)
    return "the connection ended during the handshake; a node that serves "
           "with TLS needs --tls-cert, --tls-key and --tls-ca on this side "
           "too";
  // The node may close the connection before its alert is read (the
  // reason is then lost): say what it checks.
  return "TLS handshake failed: the node closed the connection (a node "
         "accepts only client certificates signed by its --tls-ca; its log "
         "says why it refused)";
}

} // namespace sandbox::actors
