#include <functional>
#include <iostream>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, m;
    std::cin >> n >> m;
    std::vector<std::vector<std::pair<int, long long>>> adj(n + 1);
    for (int k = 0; k < m; ++k) {
        int u, v;
        long long w;
        std::cin >> u >> v >> w;
        adj[u].push_back({v, w});
    }
    const long long INF = std::numeric_limits<long long>::max();
    std::vector<long long> dist(n + 1, INF);
    using Item = std::pair<long long, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    dist[1] = 0;
    heap.push({0, 1});
    while (!heap.empty()) {
        auto [d, u] = heap.top();
        heap.pop();
        if (d > dist[u]) continue;
        for (auto [v, w] : adj[u]) {
            if (d + w < dist[v]) {
                dist[v] = d + w;
                heap.push({dist[v], v});
            }
        }
    }
    std::string out;
    for (int v = 1; v <= n; ++v) {
        if (v > 1) out += ' ';
        out += dist[v] == INF ? std::string("-1") : std::to_string(dist[v]);
    }
    std::cout << out << '\n';
    return 0;
}
