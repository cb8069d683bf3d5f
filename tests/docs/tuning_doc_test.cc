// docs/tuning.md holds the CHORUS_* variable table exactly as
// `chorus_info --variables-markdown` prints it from src/base/config.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/config.h"
#include "tools/variables_markdown.h"

namespace chorus {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines strictly between the two marker lines; empty when either is missing.
std::string GeneratedBlock(const std::string& page) {
  const std::string begin = std::string(kVariablesBeginMarker) + "\n";
  const std::string end = std::string(kVariablesEndMarker) + "\n";
  const size_t first = page.find(begin);
  if (first == std::string::npos) return "";
  const size_t from = first + begin.size();
  const size_t to = page.find(end, from);
  if (to == std::string::npos) return "";
  return page.substr(from, to - from);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TuningDocTest, PageHoldsTheTableOfConfigCc) {
  const std::string path = std::string(CHORUS_SOURCE_DIR) + "/docs/tuning.md";
  const std::string page = ReadFile(path);
  ASSERT_FALSE(page.empty()) << "cannot read " << path;
  const std::string fix = " is out of date with the table in src/base/config.cc; regenerate it with "
                          "tools/update_tuning_doc.sh build";
  const std::vector<std::string> on_page = Lines(GeneratedBlock(page));
  const std::vector<std::string> generated = Lines(VariablesMarkdown(AllEnvVars()));
  // The first differing row says what changed, instead of two whole tables.
  for (size_t i = 0; i < std::min(on_page.size(), generated.size()); ++i) {
    ASSERT_EQ(on_page[i], generated[i]) << path << fix << " (row " << i + 1 << " of the table)";
  }
  ASSERT_EQ(on_page.size(), generated.size()) << path << fix << " (rows on the page / in the code)";
}

TEST(TuningDocTest, EveryVariableHasOneRow) {
  const std::string table = VariablesMarkdown(AllEnvVars());
  for (const EnvVarSpec& spec : AllEnvVars()) {
    const std::string row = std::string("| `") + spec.name + "` |";
    const size_t at = table.find(row);
    ASSERT_NE(at, std::string::npos) << spec.name;
    EXPECT_EQ(table.find(row, at + 1), std::string::npos) << spec.name;
  }
}

TEST(TuningDocTest, CellsEscapePipesAndNameEmptyDefaults) {
  const std::vector<EnvVarSpec> vars = {
      {"CHORUS_A", "int", "2", "a|b"},
      {"CHORUS_B", "string", "", "none"},
  };
  EXPECT_EQ(VariablesMarkdown(vars),
            "| variable | type | default | meaning |\n"
            "| --- | --- | --- | --- |\n"
            "| `CHORUS_A` | int | `2` | a\\|b |\n"
            "| `CHORUS_B` | string | (empty) | none |\n");
}

TEST(TuningDocTest, MissingMarkersGiveNoBlock) {
  EXPECT_EQ(GeneratedBlock("no markers here\n"), "");
  EXPECT_EQ(GeneratedBlock(std::string(kVariablesBeginMarker) + "\n| x |\n"), "");
}

}  // namespace
}  // namespace chorus
