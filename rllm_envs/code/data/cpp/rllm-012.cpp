#include <iostream>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, W;
    std::cin >> n >> W;
    std::vector<long long> best(W + 1, 0);
    for (int i = 0; i < n; ++i) {
        int w;
        long long v;
        std::cin >> w >> v;
        for (int cap = W; cap >= w; --cap) {
            if (best[cap - w] + v > best[cap]) best[cap] = best[cap - w] + v;
        }
    }
    std::cout << best[W] << '\n';
    return 0;
}
