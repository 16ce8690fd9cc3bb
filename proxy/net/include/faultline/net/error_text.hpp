#pragma once
// What a failed step says to a user: "<step>: <message>". boost::system::system_error::what()
// appends the error's category, value and the library's source location ("... [beast.http:N at
// /usr/include/boost/beast/http/...]"), which tell a user nothing. For log lines and reports.

#include <boost/system/system_error.hpp>

#include <exception>
#include <string>

namespace faultline::net {

inline std::string error_text(const std::exception& e) {
  const auto* system = dynamic_cast<const boost::system::system_error*>(&e);
  if (system == nullptr) return e.what();
  const std::string what = system->what();
  const std::string detail = system->code().what();  // "<message> [<category>:<value>[ at <location>]]"
  if (what == detail) return system->code().message();
  if (what.size() > detail.size() + 2 && what.ends_with(": " + detail))
    return what.substr(0, what.size() - detail.size() - 2) + ": " + system->code().message();
  return what;
}

}  // namespace faultline::net
