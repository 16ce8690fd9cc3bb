#include "faultline/faults/yaml_json.hpp"

#include <boost/json/serialize.hpp>

#include "faultline/faults/scenario.hpp"
#include "faultline/faults/yaml_load.hpp"

namespace faultline::faults {

std::string yaml_to_json(std::string_view yaml, std::string_view source_name) {
  detail::Errors errors{std::string(source_name)};
  YAML::Node document = detail::load_yaml(yaml, errors);
  if (!errors.empty()) throw ScenarioError(errors.report());
  try {
    return boost::json::serialize(detail::to_json(document));
  } catch (const YAML::Exception& e) {
    errors.add(e.mark, "", e.msg);
    throw ScenarioError(errors.report());
  }
}

}  // namespace faultline::faults
