#include "pool.hpp"

#include <mutex>
#include <thread>

#include "work_queue.hpp"

Summary process_all(const std::vector<std::vector<double>>& batches, int workers) {
    WorkQueue queue;
    for (const auto& batch : batches) queue.push(new Job{batch});
    queue.close();

    RunningStats total;
    std::mutex total_mutex;
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&queue, &total] {
            while (Job* job = queue.pop()) {
                RunningStats local;
                for (double v : job->values) local.add(v);
                total.merge(local);
            }
        });
    }
    for (auto& t : threads) t.join();
    return total.summary();
}
