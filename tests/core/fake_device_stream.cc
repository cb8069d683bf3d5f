#include "fake_device_stream.h"

#include <chrono>
#include <utility>

namespace chorus::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A mark: done once the device queue reaches it.
class FakeMark final : public DeviceMark {
 public:
  explicit FakeMark(std::shared_ptr<std::atomic<bool>> reached) : reached_(std::move(reached)) {}
  Status Wait(Deadline deadline) override {
    while (!reached_->load(std::memory_order_acquire)) {
      if (deadline.Expired()) return Status(chorusTimeout, "the fake device's earlier work did not finish in time");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<std::atomic<bool>> reached_;
};

}  // namespace

class FakeDeviceStream::StreamLink final : public DeviceStreamLink {
 public:
  StreamLink(FakeDeviceStream* device, int wait_ms) : DeviceStreamLink(wait_ms), device_(device) {}

 protected:
  Status MarkQueued(std::unique_ptr<DeviceMark>* mark) override {
    auto reached = std::make_shared<std::atomic<bool>>(false);
    device_->Launch([reached] { reached->store(true, std::memory_order_release); });
    *mark = std::make_unique<FakeMark>(reached);
    return Status::Ok();
  }

  Status HoldUntil(uint32_t ticket) override {
    ++device_->memory_waits_;
    // The word is shared: the wait may run after the link is gone.
    device_->Launch([word = word_, ticket, device = device_] {
      const auto give_up = Clock::now() + std::chrono::seconds(10);
      // cuStreamWaitValue32's cyclic greater-or-equal.
      while (static_cast<int32_t>(word->load(std::memory_order_acquire) - ticket) < 0) {
        if (Clock::now() > give_up) {
          ++device->abandoned_waits_;
          return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
    return Status::Ok();
  }

  void Release(uint32_t ticket) override { word_->store(ticket, std::memory_order_release); }

 private:
  FakeDeviceStream* device_;
  std::shared_ptr<std::atomic<uint32_t>> word_ = std::make_shared<std::atomic<uint32_t>>(0);
};

FakeDeviceStream::FakeDeviceStream() : worker_([this] { Serve(); }) {}

FakeDeviceStream::~FakeDeviceStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void FakeDeviceStream::Launch(std::function<void()> kernel) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(kernel));
  }
  work_cv_.notify_one();
}

bool FakeDeviceStream::Synchronize(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return queue_.empty() && !running_; });
}

std::unique_ptr<DeviceStreamLink> FakeDeviceStream::Link(int wait_ms) {
  return std::make_unique<StreamLink>(this, wait_ms);
}

void FakeDeviceStream::Serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    std::function<void()> kernel = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    kernel();
    lock.lock();
    running_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace chorus::testing
