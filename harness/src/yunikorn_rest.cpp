#include "faultline/harness/yunikorn_rest.hpp"

#include <boost/json.hpp>

namespace faultline::harness {
namespace json = boost::json;
namespace {

json::value parse(std::string_view text, const char* what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) throw DecodeError(std::string(what) + ": not JSON: " + ec.message());
  return v;
}

std::string str(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (v == nullptr) return {};
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_number()) return json::serialize(*v);  // e.g. a numeric timestamp
  return {};
}

std::map<std::string, std::int64_t> resources(const json::object& o, std::string_view key) {
  std::map<std::string, std::int64_t> out;
  auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_object()) return out;
  for (const auto& [name, qty] : v->get_object()) {
    if (qty.is_int64()) out[std::string(name)] = qty.get_int64();
    else if (qty.is_uint64()) out[std::string(name)] = static_cast<std::int64_t>(qty.get_uint64());
  }
  return out;
}

const json::array& array_of(const json::value& v, const char* what) {
  if (!v.is_array()) throw DecodeError(std::string(what) + ": expected a JSON array");
  return v.get_array();
}

YkAllocation allocation(const json::object& o) {
  YkAllocation a;
  a.allocation_key = str(o, "allocationKey");
  a.application_id = str(o, "applicationId");
  a.node_id = str(o, "nodeId");
  a.resource = resources(o, "resource");
  if (auto* tags = o.if_contains("allocationTags"); tags != nullptr && tags->is_object()) {
    a.pod_name = str(tags->get_object(), "kubernetes.io/meta/podName");
  }
  return a;
}

std::vector<YkAllocation> allocations(const json::object& o) {
  std::vector<YkAllocation> out;
  if (auto* list = o.if_contains("allocations"); list != nullptr && list->is_array()) {
    for (const auto& a : list->get_array()) {
      if (a.is_object()) out.push_back(allocation(a.get_object()));
    }
  }
  return out;
}

void flatten(const json::value& v, std::vector<YkQueue>& out) {
  if (!v.is_object()) throw DecodeError("queues: expected a queue object");
  const auto& o = v.get_object();
  YkQueue q;
  q.name = str(o, "queuename");
  if (q.name.empty()) throw DecodeError("queues: a queue has no queuename");
  auto* leaf = o.if_contains("isLeaf");
  q.leaf = leaf != nullptr && leaf->is_bool() && leaf->get_bool();
  q.allocated = resources(o, "allocatedResource");
  out.push_back(std::move(q));
  if (auto* children = o.if_contains("children"); children != nullptr && children->is_array()) {
    for (const auto& c : children->get_array()) flatten(c, out);
  }
}

}  // namespace

std::vector<YkQueue> decode_queues(std::string_view text) {
  std::vector<YkQueue> out;
  flatten(parse(text, "queues"), out);
  return out;
}

std::vector<YkApplication> decode_applications(std::string_view text) {
  std::vector<YkApplication> out;
  const json::value doc = parse(text, "applications");  // must outlive the loop
  for (const auto& v : array_of(doc, "applications")) {
    if (!v.is_object()) throw DecodeError("applications: expected application objects");
    const auto& o = v.get_object();
    YkApplication app;
    app.id = str(o, "applicationID");
    app.queue = str(o, "queueName");
    app.state = str(o, "applicationState");
    app.allocations = allocations(o);
    for (auto& a : app.allocations) {
      if (a.application_id.empty()) a.application_id = app.id;
    }
    out.push_back(std::move(app));
  }
  return out;
}

std::vector<YkNode> decode_nodes(std::string_view text) {
  std::vector<YkNode> out;
  const json::value doc = parse(text, "nodes");
  for (const auto& v : array_of(doc, "nodes")) {
    if (!v.is_object()) throw DecodeError("nodes: expected node objects");
    const auto& o = v.get_object();
    YkNode node;
    node.id = str(o, "nodeID");
    node.allocations = allocations(o);
    out.push_back(std::move(node));
  }
  return out;
}

}  // namespace faultline::harness
