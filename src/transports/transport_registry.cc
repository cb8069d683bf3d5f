#include "transports/transport_registry.h"

#include <algorithm>
#include <cstring>

#include "base/config.h"

namespace chorus {

void TransportVars::Set(const std::string& name, std::string value) {
  for (auto& entry : values_) {
    if (entry.first == name) {
      entry.second = std::move(value);
      return;
    }
  }
  values_.emplace_back(name, std::move(value));
}

std::string TransportVars::Get(const char* name) const {
  for (const auto& entry : values_) {
    if (entry.first == name) return entry.second;
  }
  return EnvValue(name);
}

const std::string* PeerPublication::AddressFor(const std::string& transport) const {
  for (const PublishedAddress& published : addresses) {
    if (published.transport == transport) return &published.address;
  }
  return nullptr;
}

bool ReachesByDefault(const TransportDescriptor& descriptor, const PeerPublication& self,
                      const PeerPublication& peer) {
  if (self.AddressFor(descriptor.name) == nullptr || peer.AddressFor(descriptor.name) == nullptr) return false;
  return !descriptor.capabilities.same_host_only || self.host == peer.host;
}

bool Reaches(const TransportDescriptor& descriptor, const PeerPublication& self, const PeerPublication& peer) {
  return descriptor.reaches != nullptr ? descriptor.reaches(descriptor, self, peer)
                                       : ReachesByDefault(descriptor, self, peer);
}

TransportRegistry::TransportRegistry(std::vector<TransportDescriptor> descriptors)
    : descriptors_(std::move(descriptors)) {}

const TransportDescriptor* TransportRegistry::Find(const std::string& name) const {
  for (const TransportDescriptor& descriptor : descriptors_) {
    if (name == descriptor.name || (descriptor.alias != nullptr && name == descriptor.alias)) return &descriptor;
  }
  return nullptr;
}

std::string TransportRegistry::KnownNames() const {
  std::string names;
  for (const TransportDescriptor& descriptor : descriptors_) {
    names += StrCat(names.empty() ? "" : ", ", descriptor.name);
    if (descriptor.alias != nullptr) names += StrCat(" (or ", descriptor.alias, ")");
  }
  return names;
}

Status TransportRegistry::ParseSelection(const std::string& text,
                                         std::vector<const TransportDescriptor*>* order) const {
  std::vector<const TransportDescriptor*> chosen;
  auto invalid = [&](const std::string& why) {
    return InvalidArgument("CHORUS_TRANSPORT='", text, "': ", why, "; known transports: ", KnownNames(),
                           " (or auto, or an ordered list such as 'shm,tcp')");
  };
  if (text == "auto") {
    for (const TransportDescriptor& descriptor : descriptors_) {
      if (!descriptor.explicit_only) chosen.push_back(&descriptor);
    }
    std::stable_sort(chosen.begin(), chosen.end(), [](const TransportDescriptor* a, const TransportDescriptor* b) {
      return a->preference < b->preference;
    });
    *order = std::move(chosen);
    return Status::Ok();
  }
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string name = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (name.empty()) return invalid("empty transport name");
    if (name == "auto") return invalid("'auto' cannot be part of a list");
    const TransportDescriptor* descriptor = Find(name);
    if (descriptor == nullptr) return invalid(StrCat("unknown transport '", name, "'"));
    if (std::find(chosen.begin(), chosen.end(), descriptor) != chosen.end()) {
      return invalid(StrCat("'", name, "' is listed twice"));
    }
    chosen.push_back(descriptor);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  *order = std::move(chosen);
  return Status::Ok();
}

Status TransportRegistry::CaptureVars(TransportVars* vars) const {
  for (const TransportDescriptor& descriptor : descriptors_) {
    if (descriptor.variables != nullptr) {
      for (const char* const* name = descriptor.variables; *name != nullptr; ++name) vars->Set(*name, EnvValue(*name));
    }
  }
  for (const TransportDescriptor& descriptor : descriptors_) {
    if (descriptor.check != nullptr) CHORUS_RETURN_IF_ERROR(descriptor.check(*vars));
  }
  return Status::Ok();
}

std::vector<int> ChooseTransports(const std::vector<const TransportDescriptor*>& order,
                                  const std::vector<PeerPublication>& peers, int self_rank) {
  std::vector<int> choice(peers.size(), -1);
  for (size_t peer = 0; peer < peers.size(); ++peer) {
    if (static_cast<int>(peer) == self_rank) continue;
    for (size_t i = 0; i < order.size(); ++i) {
      if (!order[i]->overlay && Reaches(*order[i], peers[self_rank], peers[peer])) {
        choice[peer] = static_cast<int>(i);
        break;
      }
    }
  }
  return choice;
}

namespace {

// Ranks alike for reachability are checked once: a job of thousands of
// ranks has few such classes. The default rule depends on the host and the
// transports published; a descriptor's own rule may read the address too.
std::string ReachClass(const std::vector<const TransportDescriptor*>& order, const PeerPublication& peer) {
  std::string key = peer.host;
  for (const PublishedAddress& published : peer.addresses) {
    key += StrCat('\0', published.transport);
    for (const TransportDescriptor* descriptor : order) {
      if (descriptor->reaches != nullptr && published.transport == descriptor->name) {
        key += StrCat('\0', published.address);
      }
    }
  }
  return key;
}

std::string Published(const PeerPublication& peer) {
  std::string names;
  for (const PublishedAddress& published : peer.addresses) {
    names += StrCat(names.empty() ? "" : ", ", published.transport);
  }
  return names.empty() ? "none" : names;
}

}  // namespace

Status CheckEveryPairReachable(const std::vector<const TransportDescriptor*>& order,
                               const std::vector<PeerPublication>& peers, const std::string& selection_text) {
  std::vector<std::string> keys;
  std::vector<int> representative;  // first rank of each class
  std::vector<int> count;
  for (size_t rank = 0; rank < peers.size(); ++rank) {
    const std::string key = ReachClass(order, peers[rank]);
    const size_t index = std::find(keys.begin(), keys.end(), key) - keys.begin();
    if (index == keys.size()) {
      keys.push_back(key);
      representative.push_back(static_cast<int>(rank));
      count.push_back(0);
    }
    ++count[index];
  }
  for (size_t a = 0; a < keys.size(); ++a) {
    for (size_t b = a; b < keys.size(); ++b) {
      const int ra = representative[a];
      int rb = representative[b];
      if (a == b) {
        if (count[a] < 2) continue;
        // Another rank of the same class.
        for (size_t r = static_cast<size_t>(ra) + 1; r < peers.size(); ++r) {
          if (ReachClass(order, peers[r]) == keys[a]) {
            rb = static_cast<int>(r);
            break;
          }
        }
      }
      bool reached = false;
      for (const TransportDescriptor* descriptor : order) {
        reached = reached || (!descriptor->overlay && Reaches(*descriptor, peers[ra], peers[rb]));
      }
      if (reached) continue;
      std::string tried;
      for (const TransportDescriptor* descriptor : order) tried += StrCat(tried.empty() ? "" : ", ", descriptor->name);
      return InvalidUsage("CHORUS_TRANSPORT=", selection_text, ": no transport reaches rank ", rb, " from rank ", ra,
                          " (tried ", tried, "; rank ", ra, " is on host '", peers[ra].host, "' offering ",
                          Published(peers[ra]), ", rank ", rb, " on host '", peers[rb].host, "' offering ",
                          Published(peers[rb]), ")",
                          order.size() == 1 && order[0]->capabilities.same_host_only
                              ? StrCat("; ", order[0]->name, " reaches only ranks on the same host")
                              : std::string());
    }
  }
  return Status::Ok();
}

}  // namespace chorus
