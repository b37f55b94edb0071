#include <string>
#include <vector>

// A dependency graph: add_edge(from, to) means `to` depends on `from`, so `from` must come first.
// Keep exactly this public interface; choose any members and helpers you like.
class DependencyGraph {
public:
    // Adds a node. Returns false, changing nothing, if a node with that name already exists.
    bool add_node(const std::string& name) {
        (void)name;
        return false;
    }

    // Adds the edge from -> to. Returns false and leaves the graph unchanged if either node is missing,
    // from == to, the edge already exists, or the edge would close a cycle.
    bool add_edge(const std::string& from, const std::string& to) {
        (void)from;
        (void)to;
        return false;
    }

    // Removes the edge from -> to. Returns false if there was no such edge.
    bool remove_edge(const std::string& from, const std::string& to) {
        (void)from;
        (void)to;
        return false;
    }

    // Every node exactly once, each one after all the nodes it depends on.
    std::vector<std::string> order() const { return {}; }
};
