#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    std::vector<std::pair<long long, long long>> iv(n);
    for (auto& [l, r] : iv) std::cin >> l >> r;
    std::sort(iv.begin(), iv.end());
    long long count = 0, total = 0;
    long long curL = 0, curR = 0;
    for (int i = 0; i < n; ++i) {
        auto [l, r] = iv[i];
        if (i > 0 && l <= curR) {
            curR = std::max(curR, r);
        } else {
            if (i > 0) total += curR - curL;
            ++count;
            curL = l;
            curR = r;
        }
    }
    if (n > 0) total += curR - curL;
    std::cout << count << ' ' << total << '\n';
    return 0;
}
