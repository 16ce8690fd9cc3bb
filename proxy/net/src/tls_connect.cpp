#include "faultline/net/tls_connect.hpp"

namespace faultline::net {

std::string ConnectError::step_name() const {
  switch (step) {
    case Step::resolve:
      return "resolving " + endpoint.host;
    case Step::connect:
      return "connecting";
    case Step::handshake:
      return "TLS handshake";
  }
  return "connecting";
}

std::string ConnectError::message() const { return step_name() + ": " + ec.message(); }

std::string ConnectError::describe() const { return endpoint.to_string() + ": " + message(); }

}  // namespace faultline::net
