#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

// One unit of work: a batch of samples.
struct Job {
    std::vector<double> values;
};

// A closable multi-consumer queue. pop() blocks until a job arrives or the queue is closed and drained,
// then returns nullptr. The caller owns every job it pops.
class WorkQueue {
public:
    void push(Job* job) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            jobs_.push_back(job);
        }
        ready_.notify_one();
    }

    void close() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            closed_ = true;
        }
        ready_.notify_all();
    }

    Job* pop() {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return closed_ || !jobs_.empty(); });
        if (jobs_.empty()) return nullptr;
        Job* job = jobs_.front();
        jobs_.pop_front();
        return job;
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job*> jobs_;
    bool closed_ = false;
};
