#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// Adjacency sets keyed by node index; names map to indices so edges stay cheap to store and walk.
class DependencyGraph {
public:
    bool add_node(const std::string& name) {
        if (index_.count(name)) return false;
        index_.emplace(name, names_.size());
        names_.push_back(name);
        out_.emplace_back();
        return true;
    }

    bool add_edge(const std::string& from, const std::string& to) {
        auto f = index_.find(from), t = index_.find(to);
        if (f == index_.end() || t == index_.end() || f->second == t->second) return false;
        if (out_[f->second].count(t->second)) return false;
        // from -> to closes a cycle exactly when `to` already reaches `from`.
        if (reaches(t->second, f->second)) return false;
        out_[f->second].insert(t->second);
        return true;
    }

    bool remove_edge(const std::string& from, const std::string& to) {
        auto f = index_.find(from), t = index_.find(to);
        if (f == index_.end() || t == index_.end()) return false;
        return out_[f->second].erase(t->second) > 0;
    }

    // Kahn's algorithm: repeatedly emit a node whose dependencies have all been emitted.
    std::vector<std::string> order() const {
        std::vector<std::size_t> indeg(names_.size(), 0);
        for (const auto& targets : out_)
            for (std::size_t t : targets) ++indeg[t];
        std::vector<std::size_t> ready;
        for (std::size_t v = 0; v < names_.size(); ++v)
            if (indeg[v] == 0) ready.push_back(v);
        std::vector<std::string> result;
        result.reserve(names_.size());
        while (!ready.empty()) {
            std::size_t v = ready.back();
            ready.pop_back();
            result.push_back(names_[v]);
            for (std::size_t t : out_[v])
                if (--indeg[t] == 0) ready.push_back(t);
        }
        return result;
    }

private:
    // Iterative DFS with a visited set: linear in the graph, no recursion depth limit.
    bool reaches(std::size_t start, std::size_t goal) const {
        std::vector<char> seen(names_.size(), 0);
        std::vector<std::size_t> stack{start};
        seen[start] = 1;
        while (!stack.empty()) {
            std::size_t v = stack.back();
            stack.pop_back();
            if (v == goal) return true;
            for (std::size_t t : out_[v])
                if (!seen[t]) {
                    seen[t] = 1;
                    stack.push_back(t);
                }
        }
        return false;
    }

    std::unordered_map<std::string, std::size_t> index_;
    std::vector<std::string> names_;
    std::vector<std::unordered_set<std::size_t>> out_;
};
