#include <algorithm>
#include <iostream>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    long long best = 0, cur = 0;
    for (int i = 0; i < n; ++i) {
        long long x;
        std::cin >> x;
        cur = (i == 0 || cur < 0) ? x : cur + x;
        best = (i == 0) ? cur : std::max(best, cur);
    }
    std::cout << best << '\n';
    return 0;
}
