#pragma once

// Certificates for TLS tests, made at test time with the `openssl` tool.
//
// The commands are the ones docs/tls.md shows, step by step: a CA, a node
// certificate and a client certificate signed by it. For the refusal tests
// a second CA signs a client certificate of its own, and one key belongs to
// no certificate at all.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "helpers/temp_dir.hpp"

namespace sandbox::test {

/// A directory of PEM files, made once per instance (about ten `openssl`
/// runs, well under a second with EC keys).
struct tls_files {
  temp_dir dir;

  /// The CA every good certificate is signed with.
  std::string ca = dir.at("ca.pem");
  std::string ca_key = dir.at("ca.key");
  /// The node's certificate and key (extended key usage: serverAuth).
  std::string node_cert = dir.at("node.pem");
  std::string node_key = dir.at("node.key");
  /// A client's certificate and key (extended key usage: clientAuth).
  std::string client_cert = dir.at("client.pem");
  std::string client_key = dir.at("client.key");
  /// A second CA, and a client certificate it signed.
  std::string other_ca = dir.at("other-ca.pem");
  std::string other_client_cert = dir.at("other-client.pem");
  std::string other_client_key = dir.at("other-client.key");
  /// A key that matches no certificate here.
  std::string stray_key = dir.at("stray.key");
  /// `client_key` encrypted with the passphrase "secret".
  std::string encrypted_key = dir.at("encrypted.key");

  tls_files() {
    for (auto& cmd : commands())
      run(cmd);
  }

  /// The shell commands, run in `dir` in this order.
  static std::vector<std::string> commands() {
    return {
      // 1. The CA: a self-signed certificate and its key.
      ca_cmd("ca", "sandbox CA"),
      // 2. The node: a key and a signing request, signed by the CA.
      ext_cmd("node", "serverAuth"),
      csr_cmd("node", "sandbox node"),
      sign_cmd("node", "ca"),
      // 3. A client, the same way.
      ext_cmd("client", "clientAuth"),
      csr_cmd("client", "sandbox client"),
      sign_cmd("client", "ca"),
      // For the tests only: another CA and its client, a stray key, an
      // encrypted key.
      ca_cmd("other-ca", "another CA"),
      ext_cmd("other-client", "clientAuth"),
      csr_cmd("other-client", "another client"),
      sign_cmd("other-client", "other-ca"),
      "openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1"
      " -out stray.key",
      "openssl pkey -in client.key -aes256 -passout pass:secret"
      " -out encrypted.key",
    };
  }

  /// Makes another client certificate of the CA, of subject `CN=<cn>`,
  /// named `<name>.pem` and `<name>.key`; returns {certificate, key}.
  std::pair<std::string, std::string> add_client(const std::string& name,
                                                 const std::string& cn) const {
    run(ext_cmd(name, "clientAuth"));
    run(csr_cmd(name, cn));
    run(sign_cmd(name, "ca"));
    return {dir.at(name + ".pem"), dir.at(name + ".key")};
  }

  /// Writes `text` to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    auto path = dir.at(name);
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out << text;
    if (!out.flush())
      throw std::runtime_error("cannot write " + path);
    return path;
  }

  /// Returns the contents of `path`.
  static std::string read(const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }

  /// Runs `cmd` in the directory; throws with its output when it fails.
  void run(const std::string& cmd) const {
    auto log = dir.at("openssl.log");
    auto full = "cd '" + dir.path + "' && " + cmd + " >'" + log + "' 2>&1";
    if (std::system(full.c_str()) != 0)
      throw std::runtime_error("certificate set-up failed: " + cmd + ": "
                               + read(log));
  }

private:
  static std::string ca_cmd(const std::string& name, const std::string& cn) {
    return "openssl req -x509 -new -newkey ec"
           " -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650"
           " -subj '/CN="
           + cn + "' -keyout " + name + ".key -out " + name + ".pem";
  }

  static std::string ext_cmd(const std::string& name,
                             const std::string& usage) {
    return "printf 'basicConstraints = CA:FALSE\\nkeyUsage = "
           "digitalSignature\\nextendedKeyUsage = "
           + usage + "\\n' > " + name + ".ext";
  }

  static std::string csr_cmd(const std::string& name, const std::string& cn) {
    return "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
           " -nodes -subj '/CN="
           + cn + "' -keyout " + name + ".key -out " + name + ".csr";
  }

  static std::string sign_cmd(const std::string& name, const std::string& ca) {
    return "openssl x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey "
           + ca + ".key -CAcreateserial -days 825 -extfile " + name
           + ".ext -out " + name + ".pem";
  }
};

} // namespace sandbox::test
