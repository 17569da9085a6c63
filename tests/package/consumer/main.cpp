// Runs `echo hi` in a session of an embedded node and prints its output.
#include <sandbox/client.hpp>

#include <iostream>

int main() {
  sandbox::actors::embedded_node node;
  auto session = sandbox::actors::blocking_session::create(node);
  if (!session) {
    std::cerr << "consumer: " << session.error().message << '\n';
    return 1;
  }
  auto result = session->execute("echo hi");
  if (!result) {
    std::cerr << "consumer: " << result.error().message << '\n';
    return 1;
  }
  std::cout << result->stdout_data;
  auto receipt = session->stop();
  return receipt && result->exit_code == 0 ? 0 : 1;
}
