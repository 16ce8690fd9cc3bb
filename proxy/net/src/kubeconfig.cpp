#include "faultline/net/kubeconfig.hpp"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <map>
#include <stdexcept>

namespace faultline::net {
namespace fs = std::filesystem;

namespace {

// One named entry (cluster, user or context) and the file it came from, for relative paths and
// error messages.
struct Named {
  YAML::Node body;
  fs::path file;
};

struct Merged {
  std::map<std::string, Named> clusters, users, contexts;
  std::string current_context;
  std::vector<fs::path> files;
};

[[noreturn]] void fail(const fs::path& file, const YAML::Node& node, const std::string& what) {
  std::string where = file.string();
  if (node && node.Mark().line >= 0) {
    where += ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
  }
  throw std::runtime_error(where + ": " + what);
}

std::string scalar(const YAML::Node& map, const char* key, const fs::path& file) {
  const YAML::Node value = map[key];
  if (!value || value.IsNull()) return {};
  if (!value.IsScalar()) fail(file, value, std::string("'") + key + "' must be a string");
  return value.as<std::string>();
}

void collect(const YAML::Node& root, const char* list_key, const char* body_key, const fs::path& file,
             std::map<std::string, Named>& into) {
  const YAML::Node list = root[list_key];
  if (!list || list.IsNull()) return;
  if (!list.IsSequence()) fail(file, list, std::string("'") + list_key + "' must be a list");
  for (const auto& item : list) {
    std::string name = scalar(item, "name", file);
    if (name.empty()) fail(file, item, std::string("an entry of '") + list_key + "' has no name");
    const YAML::Node body = item[body_key];
    if (!body || !body.IsMap()) fail(file, item, std::string("'") + name + "' has no '" + body_key + "' map");
    into.emplace(name, Named{body, file});  // first file wins, as in kubectl
  }
}

void merge_file(const fs::path& file, Merged& merged) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw std::runtime_error(file.string() + ": cannot open kubeconfig");
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(file.string() + ":" + std::to_string(e.mark.line + 1) + ":" +
                             std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) fail(file, root, "a kubeconfig must be a map");
  collect(root, "clusters", "cluster", file, merged.clusters);
  collect(root, "users", "user", file, merged.users);
  collect(root, "contexts", "context", file, merged.contexts);
  if (merged.current_context.empty()) merged.current_context = scalar(root, "current-context", file);
  merged.files.push_back(file);
}

std::vector<fs::path> kubeconfig_files(const fs::path& explicit_path) {
  if (!explicit_path.empty()) return {explicit_path};
  std::vector<fs::path> files;
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string list = env;
    for (std::size_t start = 0; start <= list.size();) {
      auto end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      std::string item = list.substr(start, end - start);
      if (!item.empty() && fs::exists(item)) files.emplace_back(item);
      start = end + 1;
    }
    if (files.empty()) throw std::runtime_error("KUBECONFIG='" + list + "' names no existing file");
    return files;
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr) throw std::runtime_error("no kubeconfig given, KUBECONFIG unset and HOME unset");
  return {fs::path(home) / ".kube" / "config"};
}

// Reads "<key>-data" (base64) or "<key>" (a file, relative to the kubeconfig's directory).
std::string pem_field(const Named& entry, const std::string& key) {
  std::string data = scalar(entry.body, (key + "-data").c_str(), entry.file);
  if (!data.empty()) {
    auto decoded = base64_decode(data);
    if (!decoded) fail(entry.file, entry.body[key + "-data"], "'" + key + "-data' is not valid base64");
    return *decoded;
  }
  std::string file = scalar(entry.body, key.c_str(), entry.file);
  if (file.empty()) return {};
  fs::path path = file;
  if (path.is_relative()) path = entry.file.parent_path() / path;
  try {
    return read_file(path);
  } catch (const std::exception& e) {
    fail(entry.file, entry.body[key], "'" + key + "': " + e.what());
  }
}

const Named& lookup(const std::map<std::string, Named>& map, const std::string& name, const char* kind,
                    const Named& referrer) {
  auto it = map.find(name);
  if (it == map.end()) fail(referrer.file, referrer.body, std::string("no ") + kind + " named '" + name + "'");
  return it->second;
}

void resolve_cluster(const Named& cluster, KubeconfigContext& out) {
  out.server = scalar(cluster.body, "server", cluster.file);
  if (out.server.empty()) fail(cluster.file, cluster.body, "cluster '" + out.cluster_name + "' has no server");
  out.ca_pem = pem_field(cluster, "certificate-authority");
  out.tls_server_name = scalar(cluster.body, "tls-server-name", cluster.file);
  if (const YAML::Node insecure = cluster.body["insecure-skip-tls-verify"]) {
    try {
      out.insecure_skip_verify = insecure.as<bool>();
    } catch (const YAML::Exception&) {
      fail(cluster.file, insecure, "'insecure-skip-tls-verify' must be true or false");
    }
  }
}

void resolve_user(const Named& user, KubeconfigContext& out) {
  out.client_cert_pem = pem_field(user, "client-certificate");
  out.client_key_pem = pem_field(user, "client-key");
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    fail(user.file, user.body, "user '" + out.user_name + "' has a client certificate without a key or vice versa");
  }
  out.token = scalar(user.body, "token", user.file);
  std::string token_file = scalar(user.body, "tokenFile", user.file);
  if (out.token.empty() && !token_file.empty()) {
    fs::path path = token_file;
    if (path.is_relative()) path = user.file.parent_path() / path;
    out.token = read_file(path);
    while (!out.token.empty() && (out.token.back() == '\n' || out.token.back() == '\r')) out.token.pop_back();
  }
}

}  // namespace

ClientTlsOptions KubeconfigContext::tls_options() const {
  return ClientTlsOptions{ca_pem, insecure_skip_verify, client_cert_pem, client_key_pem};
}

KubeconfigContext load_kubeconfig(const fs::path& path, const std::string& context) {
  Merged merged;
  for (const auto& file : kubeconfig_files(path)) merge_file(file, merged);
  std::string files;
  for (const auto& f : merged.files) files += (files.empty() ? "" : ":") + f.string();

  KubeconfigContext out;
  out.context_name = context.empty() ? merged.current_context : context;
  if (out.context_name.empty()) throw std::runtime_error(files + ": no current-context and no context asked for");
  auto ctx = merged.contexts.find(out.context_name);
  if (ctx == merged.contexts.end()) throw std::runtime_error(files + ": no context named '" + out.context_name + "'");
  const Named& context_entry = ctx->second;
  out.cluster_name = scalar(context_entry.body, "cluster", context_entry.file);
  out.user_name = scalar(context_entry.body, "user", context_entry.file);
  out.namespace_name = scalar(context_entry.body, "namespace", context_entry.file);
  if (out.cluster_name.empty())
    fail(context_entry.file, context_entry.body, "context '" + out.context_name + "' has no cluster");
  resolve_cluster(lookup(merged.clusters, out.cluster_name, "cluster", context_entry), out);
  if (!out.user_name.empty()) resolve_user(lookup(merged.users, out.user_name, "user", context_entry), out);
  return out;
}

std::string render_kubeconfig(const KubeconfigSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Config";
  out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value << spec.server;
  if (!spec.ca_pem.empty())
    out << YAML::Key << "certificate-authority-data" << YAML::Value << base64_encode(spec.ca_pem);
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
  if (!spec.client_cert_pem.empty()) {
    out << YAML::Key << "client-certificate-data" << YAML::Value << base64_encode(spec.client_cert_pem);
    out << YAML::Key << "client-key-data" << YAML::Value << base64_encode(spec.client_key_pem);
  }
  if (!spec.token.empty()) out << YAML::Key << "token" << YAML::Value << spec.token;
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value << spec.name;
  out << YAML::Key << "user" << YAML::Value << spec.name;
  if (!spec.namespace_name.empty()) out << YAML::Key << "namespace" << YAML::Value << spec.namespace_name;
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "current-context" << YAML::Value << spec.name;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void write_kubeconfig(const fs::path& path, const KubeconfigSpec& spec) {
  bool secret = !spec.client_key_pem.empty() || !spec.token.empty();
  write_file(path, render_kubeconfig(spec), secret);
}

std::string base64_encode(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
  std::string clean;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean += c;
  }
  if (clean.size() % 4 != 0) return std::nullopt;
  std::string out(clean.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) return std::nullopt;
  std::size_t padding = 0;
  if (!clean.empty() && clean.back() == '=') ++padding;
  if (clean.size() > 1 && clean[clean.size() - 2] == '=') ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

}  // namespace faultline::net
