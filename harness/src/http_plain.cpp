#include "faultline/harness/http_plain.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <limits>
#include <stdexcept>

#include "faultline/harness/kube_client.hpp"

namespace faultline::harness {
namespace beast = boost::beast;
namespace http = beast::http;

PlainResponse http_call(const std::string& method, const std::string& url, const std::string& body,
                        const std::string& contentType, const std::string& bearerToken, std::chrono::seconds timeout) {
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed || parsed->scheme() != "http") throw std::runtime_error(url + ": expected an http:// URL");
    std::string host = parsed->host();
    std::string port = parsed->has_port() ? std::string(parsed->port()) : "80";
    std::string target = std::string(parsed->encoded_target());
    if (target.empty()) target = "/";

    boost::asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    boost::system::error_code result;
    PlainResponse out;
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::flat_buffer buffer;
    const char* step = "resolve";
    // The steps chain asynchronously so that one deadline covers connect, write and read.
    boost::asio::ip::tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(host, port, result);
    if (!result) {
        req.set(http::field::host, host + ":" + port);
        req.set(http::field::user_agent, kHarnessUserAgent);
        if (!bearerToken.empty()) req.set(http::field::authorization, "Bearer " + bearerToken);
        if (!contentType.empty()) req.set(http::field::content_type, contentType);
        req.body() = body;
        req.prepare_payload();
        stream.expires_after(timeout);
        step = "connect";
        stream.async_connect(endpoints, [&](boost::system::error_code ec, auto&&) {
            if (ec) return void(result = ec);
            step = "write";
            http::async_write(stream, req, [&](boost::system::error_code ec2, std::size_t) {
                if (ec2) return void(result = ec2);
                step = "read";
                http::async_read(stream, buffer, parser,
                                 [&](boost::system::error_code ec3, std::size_t) { result = ec3; });
            });
        });
        ioc.run();
    }
    if (result) throw std::runtime_error(method + " " + url + ": " + step + ": " + result.message());
    const auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    for (const auto& field : res) {
        std::string name(field.name_string());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out.headers[name] = std::string(field.value());
    }
    return out;
}

}  // namespace faultline::harness
