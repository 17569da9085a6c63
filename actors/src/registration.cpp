#include "sandbox/actors/registration.hpp"

#include <caf/actor_system.hpp>
#include <caf/message.hpp>

#include "sandbox/actors/protocol.hpp"

namespace sandbox::actors {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::sandbox>();
  cfg.add_message_type<chunk_sink>("sandbox::actors::chunk_sink");
  cfg.add_message_type<process_actor>("sandbox::actors::process_actor");
  cfg.add_message_type<session_actor>("sandbox::actors::session_actor");
  cfg.add_message_type<filesystem_actor>("sandbox::actors::filesystem_actor");
  cfg.add_message_type<byte_sink>("sandbox::actors::byte_sink");
  cfg.add_message_type<frame_sink>("sandbox::actors::frame_sink");
  cfg.add_message_type<restricted_session>(
    "sandbox::actors::restricted_session");
  cfg.add_message_type<node_actor>("sandbox::actors::node_actor");
  cfg.add_message_type<std::vector<session_info>>(
    "std::vector<sandbox::actors::session_info>");
  cfg.add_message_type<exit_reason>("sandbox::exit_reason");
  cfg.add_message_type<stream_kind>("sandbox::stream_kind");
  cfg.add_error_category(caf::atom("sandbox"), [](uint8_t code, caf::atom_value,
                                                  const caf::message& ctx) {
    std::string result{to_string(static_cast<errc>(code))};
    if (ctx.match_elements<std::string>()) {
      result += ": ";
      result += ctx.get_as<std::string>(0);
    }
    return result;
  });
}

system_config::system_config() {
  register_types(*this);
}

std::string error_message(const caf::error& err) {
  if (err.category() == caf::atom("sandbox")
      && err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  return caf::to_string(err);
}

std::string error_code_name(const caf::error& err) {
  if (err.category() == caf::atom("sandbox"))
    return std::string{to_string(static_cast<errc>(err.code()))};
  return "io_error";
}

} // namespace sandbox::actors
