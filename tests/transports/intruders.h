// Strangers for the tests of listeners that authenticate connections: they
// connect without the secret and never complete a handshake. Idle ones stay
// silent; trickling ones send one junk byte every 100 ms (from a thread);
// junk ones send a whole junk handshake reply at once. POSIX sockets only,
// so that tests of any layer (the C API's too) can use it.
#pragma once

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace chorus_test {

class Intruders {
 public:
  Intruders() = default;
  Intruders(const Intruders&) = delete;
  Intruders& operator=(const Intruders&) = delete;
  ~Intruders() {
    stop_ = true;
    if (trickler_.joinable()) trickler_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : idle_) ::close(fd);
    for (int fd : trickling_) ::close(fd);
  }

  // Opens that many connections of each kind to "host:port" ("[v6]:port");
  // returns how many connected.
  int Attack(const std::string& address, int idle, int trickling, int junk) {
    int connected = 0;
    for (int i = 0; i < idle + trickling + junk; ++i) {
      const int fd = Connect(address);
      if (fd < 0) continue;
      ++connected;
      std::lock_guard<std::mutex> lock(mutex_);
      if (i < idle) {
        idle_.push_back(fd);
      } else if (i < idle + trickling) {
        trickling_.push_back(fd);
      } else {
        const std::vector<char> reply(48, '\x5a');  // the size of a handshake reply, no valid MAC
        [[maybe_unused]] ssize_t sent = ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        idle_.push_back(fd);  // kept open: the listener must close it
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!trickling_.empty() && !trickler_.joinable()) trickler_ = std::thread([this] { Trickle(); });
    return connected;
  }

  // A blocking connect to "host:port"; -1 when it fails.
  static int Connect(const std::string& address) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return -1;
    std::string host = address.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    const std::string port = address.substr(colon + 1);
    addrinfo hints = {};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) return -1;
    const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool ok = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    ::freeaddrinfo(found);
    if (!ok && fd >= 0) ::close(fd);
    return ok ? fd : -1;
  }

 private:
  void Trickle() {
    while (!stop_) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (int fd : trickling_) {
          [[maybe_unused]] ssize_t sent = ::send(fd, "?", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::mutex mutex_;
  std::vector<int> idle_;
  std::vector<int> trickling_;
  std::atomic<bool> stop_{false};
  std::thread trickler_;
};

}  // namespace chorus_test
