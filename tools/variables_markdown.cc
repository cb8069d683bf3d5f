#include "tools/variables_markdown.h"

namespace chorus {
namespace {

std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string VariablesMarkdown(const std::vector<EnvVarSpec>& vars) {
  std::string out = "| variable | type | default | meaning |\n| --- | --- | --- | --- |\n";
  for (const EnvVarSpec& spec : vars) {
    const std::string default_value = spec.default_value[0] != '\0' ? "`" + Cell(spec.default_value) + "`" : "(empty)";
    out += "| `" + Cell(spec.name) + "` | " + Cell(spec.type) + " | " + default_value + " | " + Cell(spec.help) + " |\n";
  }
  return out;
}

}  // namespace chorus
