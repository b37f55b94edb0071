// Hidden driver for cpp-dependency-graph: replays the grader's operations and records every answer.
// It decides nothing; the grader checks the answers against its own model of the graph.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// The candidate's class lives in another translation unit (compiled without this file in reach); the
// grader appends these functions to it, so only objects meet, at the link.
class DependencyGraph;
namespace interviewer_bridge {
DependencyGraph* make();
bool add_node(DependencyGraph* g, const std::string& name);
bool add_edge(DependencyGraph* g, const std::string& from, const std::string& to);
bool remove_edge(DependencyGraph* g, const std::string& from, const std::string& to);
std::vector<std::string> order(const DependencyGraph* g);
}  // namespace interviewer_bridge

namespace {

bool read_word(std::FILE* in, std::string& out) {
    char buf[128];
    if (std::fscanf(in, "%127s", buf) != 1) return false;
    out.assign(buf);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    std::FILE* in = std::fopen(argv[1], "r");
    std::FILE* out = std::fopen(argv[2], "w");
    if (!in || !out) return 2;
    namespace br = interviewer_bridge;
    DependencyGraph* g = br::make();
    std::string op, a, b;
    while (read_word(in, op)) {
        if (op == "N") {
            if (!read_word(in, a)) return 2;
            std::fprintf(out, "N %d\n", br::add_node(g, a) ? 1 : 0);
        } else if (op == "E" || op == "R") {
            if (!read_word(in, a) || !read_word(in, b)) return 2;
            bool ok = op == "E" ? br::add_edge(g, a, b) : br::remove_edge(g, a, b);
            std::fprintf(out, "%s %d\n", op.c_str(), ok ? 1 : 0);
        } else if (op == "O") {
            const std::vector<std::string> names = br::order(g);
            std::fprintf(out, "O %zu", names.size());
            for (const std::string& n : names) std::fprintf(out, " %s", n.c_str());
            std::fputc('\n', out);
        } else {
            return 2;
        }
        // Flushed per answer so a timeout or crash still shows how far the run got.
        std::fflush(out);
    }
    std::fprintf(out, "END\n");
    std::fclose(out);
    return 0;
}
