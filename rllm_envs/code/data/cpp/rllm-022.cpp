#include <functional>
#include <iostream>
#include <queue>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, m;
    std::cin >> n >> m;
    std::vector<std::vector<int>> adj(n + 1);
    std::vector<int> indeg(n + 1, 0);
    for (int k = 0; k < m; ++k) {
        int a, b;
        std::cin >> a >> b;
        adj[a].push_back(b);
        ++indeg[b];
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> heap;
    for (int v = 1; v <= n; ++v)
        if (indeg[v] == 0) heap.push(v);
    std::vector<int> order;
    order.reserve(n);
    while (!heap.empty()) {
        int u = heap.top();
        heap.pop();
        order.push_back(u);
        for (int v : adj[u])
            if (--indeg[v] == 0) heap.push(v);
    }
    if (static_cast<int>(order.size()) != n) {
        std::cout << "IMPOSSIBLE\n";
        return 0;
    }
    std::string out;
    for (int i = 0; i < n; ++i) {
        if (i) out += ' ';
        out += std::to_string(order[i]);
    }
    std::cout << out << '\n';
    return 0;
}
