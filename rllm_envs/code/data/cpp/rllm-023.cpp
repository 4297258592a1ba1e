#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

static std::vector<int> parent_, size_;

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
    parent_.resize(n + 1);
    size_.assign(n + 1, 1);
    for (int v = 0; v <= n; ++v) parent_[v] = v;
    int circles = n;
    for (int k = 0; k < m; ++k) {
        int u, v;
        std::cin >> u >> v;
        int a = find(u), b = find(v);
        if (a == b) continue;
        if (size_[a] < size_[b]) std::swap(a, b);
        parent_[b] = a;
        size_[a] += size_[b];
        --circles;
    }
    int largest = 0;
    for (int v = 1; v <= n; ++v)
        if (parent_[v] == v) largest = std::max(largest, size_[v]);
    std::cout << circles << ' ' << largest << '\n';
    return 0;
}
