#pragma once
// The admin API's request handling without any socket: the server reads a request, asks
// check_request_header() whether it may read the body, then handle_admin_request() for the answer.

#include "faultline/admin/admin_backend.hpp"
#include "faultline/admin/admin_server.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>

namespace faultline::admin {

using AdminRequest = boost::beast::http::request<boost::beast::http::string_body>;
using AdminResponse = boost::beast::http::response<boost::beast::http::string_body>;

// An answer due before the body is read (bad target, 401, 404, 405, 413), or nullopt to go on.
std::optional<AdminResponse> check_request_header(const boost::beast::http::request_header<>& header,
                                                  const AdminServerOptions& options);

// The answer to a complete request that passed check_request_header. Never throws: backend
// exceptions become AdminError's status or 500, always with a JSON body.
AdminResponse handle_admin_request(const AdminRequest& request, AdminBackend& backend,
                                   const AdminServerOptions& options);

// A JSON error answer {"error": message}.
AdminResponse error_response(boost::beast::http::status status, std::string_view message, unsigned version = 11);

}  // namespace faultline::admin
