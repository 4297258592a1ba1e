#include <iostream>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, m;
    std::cin >> n >> m;
    std::vector<std::vector<int>> adj(n + 1);
    for (int k = 0; k < m; ++k) {
        int u, v;
        std::cin >> u >> v;
        adj[u].push_back(v);
        adj[v].push_back(u);
    }
    std::vector<int> dist(n + 1, -1), queue;
    queue.reserve(n);
    dist[1] = 0;
    queue.push_back(1);
    for (std::size_t head = 0; head < queue.size(); ++head) {
        int u = queue[head];
        for (int v : adj[u]) {
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1;
                queue.push_back(v);
            }
        }
    }
    std::cout << dist[n] << '\n';
    return 0;
}
