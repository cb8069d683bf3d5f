#include "sim_flags.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace chorus::sim {

namespace {

// Splits "12.5gbit" into 12.5 and "gbit" (lower case).
bool SplitNumber(const std::string& text, double* value, std::string* unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  *value = std::strtod(begin, &end);
  if (end == begin) return false;
  unit->clear();
  for (const char* c = end; *c != '\0'; ++c) unit->push_back(static_cast<char>(std::tolower(*c)));
  return true;
}

}  // namespace

Status ParseBytes(const std::string& text, size_t* bytes) {
  double value = 0;
  std::string unit;
  if (!SplitNumber(text, &value, &unit) || value < 0) return InvalidArgument("bad size '", text, "'");
  double scale = 1;
  if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "b") return InvalidArgument("bad size unit in '", text, "'");
  *bytes = static_cast<size_t>(value * scale);
  return Status::Ok();
}

Status ParseBandwidth(const std::string& text, double* bytes_per_second) {
  double value = 0;
  std::string unit;
  if (!SplitNumber(text, &value, &unit) || value <= 0) return InvalidArgument("bad bandwidth '", text, "'");
  if (unit.size() > 2 && unit.compare(unit.size() - 2, 2, "/s") == 0) unit.resize(unit.size() - 2);
  if (unit.size() > 2 && unit.compare(unit.size() - 2, 2, "ps") == 0) unit.resize(unit.size() - 2);
  struct Unit { const char* name; double scale; };
  static constexpr Unit kUnits[] = {{"", 1},          {"b", 1},          {"kb", 1e3},        {"mb", 1e6},
                                    {"gb", 1e9},      {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8},
                                    {"tbit", 1e12 / 8}};
  for (const Unit& u : kUnits) {
    if (unit == u.name) {
      *bytes_per_second = value * u.scale;
      return Status::Ok();
    }
  }
  return InvalidArgument("bad bandwidth unit in '", text, "' (use gbit, mbit, GB, MB)");
}

Status ParseSeconds(const std::string& text, double* seconds) {
  double value = 0;
  std::string unit;
  if (!SplitNumber(text, &value, &unit) || value < 0) return InvalidArgument("bad time '", text, "'");
  if (unit == "ns") *seconds = value * 1e-9;
  else if (unit == "us") *seconds = value * 1e-6;
  else if (unit == "ms") *seconds = value * 1e-3;
  else if (unit == "s" || unit.empty()) *seconds = value;
  else return InvalidArgument("bad time unit in '", text, "' (use ns, us, ms, s)");
  return Status::Ok();
}

Status ParseRanks(const std::string& text, std::vector<int>* ranks) {
  ranks->clear();
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const int low = std::atoi(text.substr(0, colon).c_str());
    const int high = std::atoi(text.substr(colon + 1).c_str());
    if (low < 1 || high < low) return InvalidArgument("bad rank range '", text, "'");
    for (long p = low; p <= high; p *= 2) ranks->push_back(static_cast<int>(p));
    return Status::Ok();
  }
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const int p = std::atoi(text.substr(begin, end - begin).c_str());
    if (p < 1) return InvalidArgument("bad rank count in '", text, "'");
    ranks->push_back(p);
    begin = end + 1;
  }
  return Status::Ok();
}

Status ParseSimFlags(int argc, char** argv, SimFlags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      flags->help = true;
      continue;
    }
    if (i + 1 >= argc) return InvalidArgument("flag ", flag, " needs a value");
    const std::string value = argv[++i];
    if (flag == "--coll") {
      bool found = false;
      for (int c = 0; c < static_cast<int>(Collective::kCount); ++c) {
        if (value == CollectiveName(static_cast<Collective>(c))) {
          flags->coll = static_cast<Collective>(c);
          found = true;
        }
      }
      if (!found) return InvalidArgument("unknown collective '", value, "'");
    } else if (flag == "--algo") {
      flags->algo = value;
    } else if (flag == "--bytes") {
      CHORUS_RETURN_IF_ERROR(ParseBytes(value, &flags->bytes));
    } else if (flag == "--ranks") {
      CHORUS_RETURN_IF_ERROR(ParseRanks(value, &flags->ranks));
    } else if (flag == "--hosts") {
      flags->hosts = std::atoi(value.c_str());
    } else if (flag == "--ranks-per-host") {
      flags->ranks_per_host = std::atoi(value.c_str());
      if (flags->ranks_per_host < 1) return InvalidArgument("--ranks-per-host must be at least 1");
    } else if (flag == "--bw") {
      CHORUS_RETURN_IF_ERROR(ParseBandwidth(value, &flags->inter_bandwidth_Bps));
    } else if (flag == "--latency") {
      CHORUS_RETURN_IF_ERROR(ParseSeconds(value, &flags->inter_latency_s));
    } else if (flag == "--intra-bw") {
      CHORUS_RETURN_IF_ERROR(ParseBandwidth(value, &flags->intra_bandwidth_Bps));
    } else if (flag == "--intra-latency") {
      CHORUS_RETURN_IF_ERROR(ParseSeconds(value, &flags->intra_latency_s));
    } else if (flag == "--gamma") {
      flags->gamma_s_per_byte = std::atof(value.c_str());
    } else if (flag == "--chunk") {
      CHORUS_RETURN_IF_ERROR(ParseBytes(value, &flags->chunk_bytes));
    } else if (flag == "--physical-cores") {
      flags->physical_cores = std::atoi(value.c_str());
      if (flags->physical_cores < 0) return InvalidArgument("--physical-cores must be 0 (a core per host) or more");
    } else if (flag == "--host-cpu") {
      CHORUS_RETURN_IF_ERROR(ParseSeconds(value, &flags->host_cpu_s_per_byte));
    } else if (flag == "--preset") {
      flags->preset = value;
    } else if (flag == "--compute") {
      CHORUS_RETURN_IF_ERROR(ParseSeconds(value, &flags->compute_s));
    } else {
      return InvalidArgument("unknown flag ", flag, " (see --help)");
    }
  }
  return Status::Ok();
}

const char* SimUsage() {
  return "usage: chorus_sim [--coll allreduce] [--algo ring|tree|...|all] [--bytes 30M]\n"
         "                  [--ranks 2,4,8 | 2:4096] [--hosts H] [--ranks-per-host R]\n"
         "                  [--bw 1gbit] [--latency 50us] [--intra-bw 10GB] [--intra-latency 1us]\n"
         "                  [--gamma 1e-10 (s/byte)] [--chunk 512K (0: whole steps)]\n"
         "                  [--physical-cores C (hosts share C cores; 0: one each)] [--host-cpu 1ns (per byte)]\n"
         "       chorus_sim --preset firecaffe|pipe-sgd|gossip [--bytes ..] [--bw ..] [--compute 100ms]\n";
}

}  // namespace chorus::sim
