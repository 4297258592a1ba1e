#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

struct Edge {
    int cost, u, v;
};

static std::vector<int> parent_;

static int find(int x) {
    while (parent_[x] != x) {
        parent_[x] = parent_[parent_[x]];
        x = parent_[x];
    }
    return x;
}

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, m;
    std::cin >> n >> m;
    std::vector<Edge> edges(m);
    for (auto& e : edges) std::cin >> e.u >> e.v >> e.cost;
    std::sort(edges.begin(), edges.end(),
              [](const Edge& x, const Edge& y) { return x.cost < y.cost; });
    parent_.resize(n + 1);
    for (int v = 0; v <= n; ++v) parent_[v] = v;
    long long total = 0;
    int used = 0;
    for (const auto& e : edges) {
        int a = find(e.u), b = find(e.v);
        if (a == b) continue;
        parent_[a] = b;
        total += e.cost;
        ++used;
    }
    std::cout << (used == n - 1 ? total : -1LL) << '\n';
    return 0;
}
